// The list file's syntax: lines → entries, each with its section, line number and comment. This room knows
// the text format only (comments, blank lines, CRLF, `[section]` markers, one token per line); what a
// token may be and what the entries mean together is the model's job (model.ts).
//
// Names before any section marker apply both ways, as if under `[both]`: a plain list of names is a list.

export type Direction = "request" | "response";
export type Section = "both" | Direction;

/** The directions a section's names apply to. */
export function directionsOf(section: Section): Direction[] {
  return section === "both" ? ["request", "response"] : [section];
}

/** One name or family line of the list, as written. */
export interface ListLine {
  /** The token as written (`x-b3-*`, `X-Bad`): not yet validated. */
  readonly token: string;
  /** Undefined below an unknown section marker: the token is still validated, but applies nowhere. */
  readonly section: Section | undefined;
  /** 1-based line in the file. */
  readonly line: number;
  /** The comment on the line, if any. */
  readonly reason: string;
}

/** A problem found at one line (0: about the whole file). */
export interface LineProblem {
  readonly line: number;
  readonly message: string;
}

export interface ListFile {
  /** The file's name as shown in messages (`src/edge/internal-headers.txt`). */
  readonly file: string;
  readonly lines: readonly ListLine[];
  readonly problems: readonly LineProblem[];
}

/** Splits a list file's text into name lines; syntax problems are returned with their line, never thrown. */
export function readListFile(text: string, file: string): ListFile {
  const lines: ListLine[] = [];
  const problems: LineProblem[] = [];
  let section: Section | undefined = "both";

  const raw = text.split("\n");
  for (let i = 0; i < raw.length; i++) {
    const line = i + 1;
    const at = `${file}:${line}`;
    const trimmed = (raw[i] ?? "").replace(/\r$/, "").trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const m = /^(\S+)(?:\s+(.*))?$/.exec(trimmed);
    const token = m?.[1] ?? "";
    const rest = (m?.[2] ?? "").trim();
    if (rest !== "" && !rest.startsWith("#")) {
      problems.push({
        line,
        message: `${at}: unexpected text after "${token}": one name per line; a comment starts with '#' after whitespace`,
      });
      continue;
    }
    if (token.startsWith("[")) {
      const s = /^\[([^\]]*)\]$/.exec(token)?.[1];
      if (s === "both" || s === "request" || s === "response") {
        section = s;
      } else {
        section = undefined;
        problems.push({
          line,
          message: `${at}: unknown section ${token}: expected [both], [request] or [response] (names before any section apply both ways)`,
        });
      }
      continue;
    }
    lines.push({ token, section, line, reason: rest.replace(/^#+\s*/, "") });
  }
  return { file, lines, problems };
}

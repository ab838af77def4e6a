// The list's meaning: the entries of each direction, validated (header-name syntax, lowercase, breadth of
// a family, duplicates, names shadowed by a family, names the system needs) and completed with the
// built-in entries. Every problem is reported at once, each as file:line, in line order.
import { BUILT_IN, MAY_BE_LISTED, protectedHit } from "./built-in.ts";
import { type Direction, type LineProblem, type ListFile, type Section, directionsOf, readListFile } from "./list-file.ts";

export interface Entry {
  /** The name, or for a family the prefix without its `*`. Lowercase. */
  readonly name: string;
  readonly family: boolean;
  readonly section: Section;
  /** 1-based line in the list file; 0 for built-in entries. */
  readonly line: number;
  /** The comment on the entry's line, if any. */
  readonly reason: string;
}

export interface DirectionList {
  /** Exact names, sorted. */
  readonly names: readonly Entry[];
  /** Families (prefixes without `*`), sorted. */
  readonly prefixes: readonly Entry[];
}

export interface ParsedList {
  readonly file: string;
  readonly request: DirectionList;
  readonly response: DirectionList;
}

export class ListError extends Error {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(problems.join("\n"));
    this.name = "ListError";
    this.problems = problems;
  }
}

const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MIN_FAMILY_PREFIX = 3;
const DIRECTIONS: readonly Direction[] = ["request", "response"];

function where(file: string, line: number): string {
  return line === 0 ? "built in" : `${file}:${line}`;
}

function display(entry: Entry): string {
  return entry.family ? `${entry.name}*` : entry.name;
}

/** True if `entry` strips `name` (the same exact name, or a family it starts with). */
function covers(entry: Entry, name: string): boolean {
  return entry.family ? name.startsWith(entry.name) : entry.name === name;
}

/** Why `token` cannot be a list entry, or undefined. `at` is its file:line. */
function tokenProblem(token: string, at: string): string | undefined {
  const family = token.endsWith("*");
  const name = family ? token.slice(0, -1) : token;
  if (name.includes("*")) return `${at}: "${token}": '*' is only allowed once, at the end of a family (prefix*)`;
  if (name.includes("#")) return `${at}: "${token}": '#' is reserved for comments in this file (put whitespace before a comment)`;
  if (name === "" || !TCHAR.test(name)) {
    const bad = [...name].find((c) => !TCHAR.test(c));
    return (
      `${at}: "${token}" is not a valid header name` +
      (bad === undefined ? "" : `: ${JSON.stringify(bad)} is not an RFC 9110 token character`)
    );
  }
  if (name !== name.toLowerCase()) return `${at}: "${token}" must be lowercase: write "${token.toLowerCase()}"`;
  if (family && name.length < MIN_FAMILY_PREFIX) {
    return `${at}: family "${token}" is too broad: a prefix needs at least ${MIN_FAMILY_PREFIX} characters`;
  }
  return undefined;
}

/** A name or family already covered by a (different) family of the same direction. */
function shadowingProblems(file: string, dir: Direction, entries: readonly Entry[]): string[] {
  const problems: string[] = [];
  const families = entries.filter((e) => e.family);
  for (const e of entries) {
    for (const f of families) {
      if (f === e || !e.name.startsWith(f.name)) continue;
      if (e.family && e.name === f.name) continue; // reported as a duplicate
      const [later, earlier] = e.line === 0 ? [f, e] : [e, f];
      const verb = later === e ? "is already covered by" : "covers";
      const other = later === e ? f : e;
      problems.push(
        `${where(file, later.line)}: "${display(later)}" ${verb} the family "${display(other)}" (${where(file, earlier.line)}) ` +
          `in the ${dir} direction` +
          (other.line === 0 ? `: every ${display(other)} is always stripped from ${dir}s` : ": remove one of them"),
      );
    }
  }
  return problems;
}

/** Validates a read list file and completes it with the built-in entries. Throws ListError. */
export function buildModel(list: ListFile): ParsedList {
  const { file } = list;
  const lineProblems: LineProblem[] = [...list.problems];
  const optional = (e: Entry) => MAY_BE_LISTED.has(display(e));
  const byDir: Record<Direction, Entry[]> = {
    request: BUILT_IN.request.filter((e) => !optional(e)),
    response: BUILT_IN.response.filter((e) => !optional(e)),
  };
  const seen: Record<Direction, Map<string, Entry>> = { request: new Map(), response: new Map() };
  for (const dir of DIRECTIONS) for (const e of byDir[dir]) seen[dir].set(display(e), e);

  for (const { token, section, line, reason } of list.lines) {
    const at = `${file}:${line}`;
    const problem = tokenProblem(token, at);
    if (problem !== undefined) {
      lineProblems.push({ line, message: problem });
      continue;
    }
    if (section === undefined) continue; // below an unknown section marker, already reported
    const family = token.endsWith("*");
    const entry: Entry = { name: family ? token.slice(0, -1) : token, family, section, line, reason };
    const key = display(entry);
    for (const dir of directionsOf(section)) {
      const dup = seen[dir].get(key);
      if (dup !== undefined) {
        lineProblems.push({ line, message: `${at}: "${key}" is listed twice for the ${dir} direction (first at ${where(file, dup.line)})` });
        continue;
      }
      const guard = protectedHit(entry, dir);
      if (guard !== undefined) {
        const what = dir === "request" ? "requests" : "responses";
        lineProblems.push({ line, message: `${at}: "${key}" would strip ${guard[0]} from ${what}, which the system needs (${guard[1]})` });
        continue;
      }
      seen[dir].set(key, entry);
      byDir[dir].push(entry);
    }
  }

  // The built-ins a list may name: added where nothing listed strips them already.
  for (const dir of DIRECTIONS) {
    for (const e of BUILT_IN[dir].filter(optional)) {
      if (!byDir[dir].some((listed) => covers(listed, e.name))) byDir[dir].push(e);
    }
  }

  const problems = lineProblems.sort((a, b) => a.line - b.line).map((p) => p.message);
  for (const dir of DIRECTIONS) problems.push(...shadowingProblems(file, dir, byDir[dir]));
  if (problems.length > 0) throw new ListError(problems);

  const byName = (a: Entry, b: Entry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const finish = (entries: Entry[]): DirectionList => ({
    names: entries.filter((e) => !e.family).sort(byName),
    prefixes: entries.filter((e) => e.family).sort(byName),
  });
  return { file, request: finish(byDir.request), response: finish(byDir.response) };
}

/** Reads, validates and completes a list file's text (list file → model). Throws ListError. */
export function parseList(text: string, file: string): ParsedList {
  return buildModel(readListFile(text, file));
}

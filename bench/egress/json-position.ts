// Reading JSON with a position in its error: `line L, column C: message` for the first syntax error,
// which JSON.parse on Node 22 does not always give. Knows nothing about what the document means.
import { InputError } from "./input-error.ts";

/** Parses `text`; a syntax error becomes an InputError from `source` that says where it is. */
export function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError(source, [`not valid JSON: ${jsonErrorWhere(text, error as Error)}`]);
  }
}

/** `line L, column C: message` for a JSON.parse error (Node 22 does not always give a position). */
function jsonErrorWhere(text: string, error: Error): string {
  const pos = jsonErrorOffset(text) ?? Number(/position (\d+)/.exec(error.message)?.[1] ?? NaN);
  const message = error.message.replace(/ in JSON at position \d+.*$/s, "").replace(/, ".*" is not valid JSON$/s, "");
  if (!Number.isFinite(pos)) return message;
  const before = text.slice(0, pos);
  const line = before.split("\n").length;
  const column = pos - before.lastIndexOf("\n");
  return `line ${line}, column ${column}: ${message}`;
}

/** Offset of the first syntax error in `text` (a small recursive-descent JSON checker), or undefined. */
export function jsonErrorOffset(text: string): number | undefined {
  let i = 0;
  const n = text.length;
  class At extends Error {}
  const fail = (): never => {
    throw new At();
  };
  const ws = () => {
    while (i < n && " \t\r\n".includes(text[i]!)) i++;
  };
  const literal = (word: string) => {
    if (text.startsWith(word, i)) i += word.length;
    else fail();
  };
  const string = () => {
    i++; // opening quote
    while (i < n && text[i] !== '"') {
      if (text.charCodeAt(i) < 0x20) fail();
      if (text[i] === "\\") {
        i++;
        if (text[i] === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail();
          i += 4;
        } else if (!'"\\/bfnrt'.includes(text[i] ?? "")) fail();
      }
      i++;
    }
    if (i >= n) fail();
    i++;
  };
  const number = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m || m[0] === "" || m[0] === "-") fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        string();
        ws();
        if (text[i] !== ":") fail();
        i++;
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return;
        }
        fail();
      }
    } else if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") {
        i++;
        return;
      }
      for (;;) {
        value();
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return;
        }
        fail();
      }
    } else if (c === '"') string();
    else if (c === "t") literal("true");
    else if (c === "f") literal("false");
    else if (c === "n") literal("null");
    else number();
  };
  try {
    value();
    ws();
    if (i < n) fail();
    return undefined;
  } catch (error) {
    if (error instanceof At) return Math.min(i, n);
    throw error;
  }
}

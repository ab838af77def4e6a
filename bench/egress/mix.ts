// The traffic mix file: a small JSON document describing a browser-facing item API's traffic. Format and
// defaults: bench/egress/README.md; the default mix is bench/egress/mix.default.json. Every problem in a
// file is reported with the field's path, all at once.
//
// This file reads one (file → JSON → validated Mix); the rooms beside it own the parts:
//   json-position.ts   JSON reading with line/column error positions
//   mix-validation.ts  the fields, their ranges, defaults and messages
//   mix-traffic.ts     generateTraffic: a Mix → the events to replay
import { readFileSync } from "node:fs";
import { InputError } from "./input-error.ts";
import { parseJson } from "./json-position.ts";
import { type Mix, validateMix } from "./mix-validation.ts";

// Callers that read a mix usually generate its traffic and report its InputError (bench/egress.ts,
// bench/load.ts, bench/load/loadgen.ts import them from here).
export { InputError } from "./input-error.ts";
export { generateTraffic } from "./mix-traffic.ts";
export type { Mix } from "./mix-validation.ts";

/** Reads and validates a mix file; throws InputError naming the file and every bad field. */
export function loadMix(path: string): Mix {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new InputError(`mix ${path}`, [`cannot read the file: ${(error as Error).message}`]);
  }
  return parseMix(text, `mix ${path}`);
}

export function parseMix(text: string, source = "mix"): Mix {
  const doc = parseJson(text, source);
  const problems: string[] = [];
  const mix = validateMix(doc, problems);
  if (problems.length > 0 || mix === undefined) throw new InputError(source, problems);
  return mix;
}

// Compiles src/edge/internal-headers.txt into src/edge/headers/internal-headers.generated.ts: one lookup
// function per direction, specialised for the list (switch on the first character; the families through a
// small trie and one startsWith; the exact names by length, then on the character positions that best split
// each group, then one full comparison). workerd refuses `new Function`/eval, so the specialisation happens
// here, at build time.
//
//   node scripts/gen-internal-headers.ts            write the generated module (only if its bytes change)
//   node scripts/gen-internal-headers.ts --check    exit 1 if the generated module is stale (CI)
//   node scripts/gen-internal-headers.ts --list FILE --out FILE   another list / output (tests)
//
// The output is a pure function of the list's text: no timestamps, stable ordering. This file is the entry
// point and the public surface; the rooms are under scripts/internal-headers/:
//   list-file.ts    the text format: lines → entries with their section, line and comment
//   model.ts        the meaning: per-direction sets, validated, with the built-ins (built-in.ts)
//   emit-lookup.ts  one lookup's decision tree; emit-module.ts the whole generated module
//   cli.ts          arguments, files, --check, exit codes
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";
import { main } from "./internal-headers/cli.ts";

// What the benchmark (bench/strip.ts) and the tests use.
export { DEFAULT_LIST, DEFAULT_OUT } from "./internal-headers/cli.ts";
export { type GenerateOptions, generateModule } from "./internal-headers/emit-module.ts";
export { ListError, type ParsedList, parseList } from "./internal-headers/model.ts";

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}

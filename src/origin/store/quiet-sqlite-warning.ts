/**
 * node:sqlite prints "ExperimentalWarning: SQLite is an experimental feature" once per thread in Node 22.
 * It is the store we chose on purpose, so that one line is kept out of the service's output; every other
 * warning still prints. Call before node:sqlite is first loaded (main.ts and the writer thread do).
 */
export function quietSqliteWarning(): void {
  const emitWarning = process.emitWarning.bind(process) as (warning: string | Error, ...rest: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning.message;
    if (text.startsWith("SQLite is an experimental feature")) return;
    emitWarning(warning, ...rest);
  }) as typeof process.emitWarning;
}

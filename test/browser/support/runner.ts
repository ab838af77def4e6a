// A tiny sequential test runner for the end-to-end suite: named checks, one line each, a closing
// "N passed, N failed" line, and a non-zero exit code on any failure (run.ts sets it).
import { isDeepStrictEqual, inspect } from "node:util";

export class CheckFailure extends Error {
  override name = "CheckFailure";
}


/** Throws a readable failure unless `actual` deep-equals `expected`. */
export function expectEqual<T>(actual: unknown, expected: T, what: string): void {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new CheckFailure(`${what}: expected ${inspect(expected, { depth: 6 })}, got ${inspect(actual, { depth: 6 })}`);
  }
}

export function expectTrue(condition: boolean, what: string): void {
  if (!condition) throw new CheckFailure(what);
}

export interface Outcome {
  name: string;
  ok: boolean;
  error?: string;
  ms: number;
}

export class Runner {
  readonly outcomes: Outcome[] = [];
  readonly group: string;

  constructor(group: string) {
    this.group = group;
  }

  async check(name: string, body: () => Promise<void>): Promise<void> {
    const started = performance.now();
    try {
      await body();
      this.record({ name, ok: true, ms: performance.now() - started });
    } catch (error) {
      const message = error instanceof CheckFailure ? error.message : ((error as Error)?.stack ?? String(error));
      this.record({ name, ok: false, error: message, ms: performance.now() - started });
    }
  }

  private record(outcome: Outcome) {
    this.outcomes.push(outcome);
    const mark = outcome.ok ? "✓" : "✗";
    process.stdout.write(`  ${mark} ${this.group} › ${outcome.name} (${outcome.ms.toFixed(0)} ms)\n`);
    if (!outcome.ok) process.stdout.write(`      ${outcome.error!.replace(/\n/g, "\n      ")}\n`);
  }
}

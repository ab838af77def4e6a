// The command line of a benchmark with a few flags: node:util's parseArgs, strict, so that a typo never runs
// the defaults; every refusal (an unknown option, a missing value, a number that is not one) is one line
// after the usage, exit 2, before anything starts; --help prints the usage, exit 0. The benchmarks with many
// options keep parsers of their own (egress/args.ts, origin/scale-args.ts, cluster/args.ts).

import { parseArgs, type ParseArgsConfig } from "node:util";

type Options = NonNullable<ParseArgsConfig["options"]>;
type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

export class BenchCli {
  readonly #values: Values;
  readonly #command: string;
  readonly #usage: string;

  /** `command`: how the user ran it (`npm run bench`), named in every refusal. */
  constructor(command: string, usage: string, options: Options, argv: readonly string[] = process.argv.slice(2)) {
    this.#command = command;
    this.#usage = usage;
    let values: Values | undefined;
    try {
      values = parseArgs({ args: [...argv], options: { ...options, help: { type: "boolean", short: "h" } }, strict: true }).values;
    } catch (error) {
      this.refuse((error as Error).message);
    }
    this.#values = values;
    if (values.help === true) {
      console.log(usage);
      process.exit(0);
    }
  }

  /** The value of a string option (its default if not given). */
  string(name: string): string | undefined {
    const value = this.#values[name];
    return typeof value === "string" ? value : undefined;
  }

  /** Every value of a `multiple` string option, in order. */
  strings(name: string): string[] {
    const value = this.#values[name];
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  }

  /** Whether a boolean option was given. */
  flag(name: string): boolean {
    return this.#values[name] === true;
  }

  /** Prints the usage and `message`, exits 2. */
  refuse(message: string): never {
    console.error(`${this.#usage}\n\n${this.#command}: ${message}`);
    process.exit(2);
  }

  /** `raw` (the value given for --`name`, or its default) as a whole number of at least `min`. */
  wholeNumber(name: string, raw: string | undefined, min = 1): number {
    const n = Number(raw);
    if (raw === undefined || !/^\d+$/.test(raw.trim()) || n < min) this.refuse(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(raw)}`);
    return n;
  }

  /** `raw` as a number greater than 0 (a duration, a rate). */
  positiveNumber(name: string, raw: string | undefined): number {
    const n = Number(raw);
    if (raw === undefined || raw.trim() === "" || !Number.isFinite(n) || n <= 0) this.refuse(`--${name} must be a number greater than 0, got ${JSON.stringify(raw)}`);
    return n;
  }
}

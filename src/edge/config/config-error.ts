export interface ConfigProblem {
  /** The var to change, e.g. `CORS_ALLOW_ORIGINS`. */
  variable: string;
  /** What is wrong and how to fix it, in one sentence a person can act on. */
  message: string;
}

/** A configuration the edge refuses to run: every problem is listed at once, each naming its var. */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    super(
      `slim-edge refuses this configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join("\n")}`,
    );
    this.name = "ConfigError";
    this.problems = problems;
  }
}

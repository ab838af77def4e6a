// The one way slim-edge refuses a configuration, for the worker, the Snippet build and the origin alike: every
// problem is collected before anything runs, each naming the variable to change and how to change it.

export interface ConfigProblem {
  /** The variable to change, e.g. `CORS_ALLOW_ORIGINS` or `CACHE_MAX_BYTES`. */
  variable: string;
  /** What is wrong and how to fix it, in one sentence a person can act on. */
  message: string;
}

/** A configuration slim-edge refuses to run: every problem is listed at once, each naming its variable. */
export class ConfigError extends Error {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    super(`slim-edge refuses this configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join("\n")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

// The error every traffic input (a mix file, an access log) throws: the source it came from and every
// problem found in it, so that one run reports them all.

export class InputError extends Error {
  readonly problems: readonly string[];
  constructor(source: string, problems: readonly string[]) {
    super(`${source}:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "InputError";
    this.problems = problems;
  }
}

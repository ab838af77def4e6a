// The shape of a deployable's variable table. Each deployable (worker, origin) has exactly one table; it
// drives parsing (the default is a string parsed by the same grammar as what a user writes, so it cannot
// drift from the parser), `--help` / `npm run check`, and the generated configuration reference in docs/.

export interface VarDoc {
  readonly name: string;
  /** The default as a user would write it; "" means unset (the meaning says what unset does). */
  readonly default: string;
  /** One or two sentences: what it does and when to change it. */
  readonly meaning: string;
  /** Never printed, never a plain var (a wrangler secret, an environment variable from a secret store). */
  readonly secret?: boolean;
}

/** The raw value to parse: what the environment says, or else the table's default. */
export function rawValue(doc: VarDoc, env: Readonly<Record<string, string | undefined>>): string {
  const raw = env[doc.name];
  return raw === undefined || raw.trim() === "" ? doc.default : raw;
}

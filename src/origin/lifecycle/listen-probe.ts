// Whether the origin can listen where it is told to, found before anything else starts: a HOST that names
// nothing, a port taken or an address not this machine's failed only at listen, after the store was opened
// and seeded, and the first read as a store failure (exit 1, retried by a service manager for ever).

import { createServer } from "node:net";
import { ConfigError, type ConfigProblem } from "../../shared/config/config-error.ts";
import type { OriginConfig } from "../config/parse-origin-config.ts";

/** No such name: a typo, refused. A resolver that cannot answer for now (EAI_AGAIN) is no refusal. */
const UNRESOLVED = new Set(["ENOTFOUND", "EAI_NONAME"]);

/**
 * Binds each listener's address once and lets it go. A HOST or METRICS_HOST that names nothing throws a
 * ConfigError naming the variable (exit 2: a service manager must not retry it); any other failure is thrown
 * as it is, to be explained like a failed listen (exit 1, retried): a port taken, a resolver not up yet, an
 * address not (yet) this machine's (a floating address on a standby, an IPv6 address still tentative at boot).
 */
export async function probeListenAddresses(config: Pick<OriginConfig, "host" | "port" | "metricsHost" | "metricsPort">): Promise<void> {
  const listeners: [string, string, number][] = [["HOST", config.host, config.port]];
  if (config.metricsPort !== undefined) listeners.push(["METRICS_HOST", config.metricsHost, config.metricsPort]);
  const problems: ConfigProblem[] = [];
  for (const [variable, host, port] of listeners) {
    try {
      await bindOnce(host, port);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      if (!UNRESOLVED.has(code)) throw error;
      problems.push({ variable, message: `"${host}" does not resolve (${code}): set an address of this machine (127.0.0.1 for this machine alone, 0.0.0.0 for every interface) or a name that resolves to one.` });
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
}

function bindOnce(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}

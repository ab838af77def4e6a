// Whether the origin can listen where it is told to, found before anything else starts: an address that
// does not resolve, or is not this machine's, failed only at listen, after the store was opened and seeded,
// and read as a store failure (exit 1, retried by a service manager for ever).

import { createServer } from "node:net";
import { ConfigError, type ConfigProblem } from "../../shared/config/config-error.ts";
import type { OriginConfig } from "../config/parse-origin-config.ts";

const UNRESOLVED = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL"]);

/**
 * Binds each listener's address once and lets it go. A HOST or METRICS_HOST that does not resolve, or is no
 * address of this machine, throws a ConfigError naming the variable; any other failure (a port taken, say)
 * is thrown as it is, to be explained like a failed listen.
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
      if (UNRESOLVED.has(code)) {
        problems.push({ variable, message: `"${host}" does not resolve (${code}): set an address of this machine (127.0.0.1 for this machine alone, 0.0.0.0 for every interface) or a name that resolves to one.` });
      } else if (code === "EADDRNOTAVAIL") {
        problems.push({ variable, message: `${host} is not an address of this machine (${code}): set one of its addresses, 127.0.0.1, or 0.0.0.0 for every interface.` });
      } else {
        throw error;
      }
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

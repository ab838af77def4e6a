// How much memory this process may use: the machine's, or the container's limit when it is lower
// (cgroup v2, then v1). CACHE_MAX_BYTES is checked against it at start, so a cache the machine cannot
// hold is refused with a message instead of ending in an out-of-memory kill hours later.

import { readFileSync } from "node:fs";
import { totalmem } from "node:os";

export interface MachineMemory {
  bytes: number;
  /** Where the figure comes from, for the message. */
  source: string;
}

export function machineMemory(): MachineMemory {
  let memory: MachineMemory = { bytes: totalmem(), source: "physical memory" };
  for (const [path, source] of [
    ["/sys/fs/cgroup/memory.max", "the cgroup's memory.max"],
    ["/sys/fs/cgroup/memory/memory.limit_in_bytes", "the cgroup's memory.limit_in_bytes"],
  ] as const) {
    const limit = readLimit(path);
    if (limit !== undefined && limit < memory.bytes) memory = { bytes: limit, source };
  }
  return memory;
}

function readLimit(path: string): number | undefined {
  try {
    const text = readFileSync(path, "utf8").trim();
    return /^\d+$/.test(text) ? Number(text) : undefined;
  } catch {
    return undefined;
  }
}

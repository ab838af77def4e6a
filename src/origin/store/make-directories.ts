// `mkdir -p` for the SQLite file's directory, one level at a time: node's recursive mkdirSync (22.x) spins for
// ever where a level is reported missing but cannot be made (a path under /proc), instead of failing.

import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";

/** Creates `dir` and every missing directory above it; throws the first level's error (ENOENT, EACCES, …). */
export function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let at = dir; !existsSync(at); at = dirname(at)) {
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
}

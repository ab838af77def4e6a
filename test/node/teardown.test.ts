// scripts/lib/teardown.ts's start(): a piece is stopped on teardown from the moment it is spawned, not only
// once it is up (a Ctrl-C while wrangler dev starts), and a piece that comes up after teardown began is
// stopped and never handed to the script, which goes no further.
import { spawn, type ChildProcess } from "node:child_process";
import { describe, expect, it } from "vitest";
import { Teardown } from "../../scripts/lib/teardown.ts";

/** A detached child in a group of its own, as local-stack.ts starts the origin and wrangler dev. */
function detachedSleep(): ChildProcess {
  return spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
}
const exited = (child: ChildProcess) =>
  new Promise<NodeJS.Signals | number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode ?? child.exitCode);
    else child.once("exit", (code, signal) => resolve(signal ?? code));
  });

describe("Teardown.start", () => {
  it("ends the group of a piece that is still starting when teardown runs", async () => {
    const teardown = new Teardown();
    let child: ChildProcess | undefined;
    const starting = teardown.start((onSpawn) => {
      child = detachedSleep();
      onSpawn(child);
      return new Promise<never>((_, reject) => child!.once("exit", () => reject(new Error("exited before it was ready"))));
    });
    await teardown.run();
    expect(await exited(child!)).toBe("SIGTERM");
    await expect(starting).rejects.toThrow("exited before it was ready");
  });

  it("starts nothing once teardown is under way", async () => {
    const teardown = new Teardown();
    await teardown.run();
    let started = false;
    let handed = false;
    void teardown
      .start(async () => {
        started = true;
        return { child: detachedSleep(), stop: async () => {} };
      })
      .then(() => (handed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect([started, handed]).toEqual([false, false]);
  });

  it("stops a piece that comes up after teardown began, and never resolves with it", async () => {
    const teardown = new Teardown();
    const child = detachedSleep();
    let stopped = false;
    let ready!: () => void;
    const up = new Promise<void>((resolve) => (ready = resolve));
    let handed = false;
    void teardown
      .start(async (onSpawn) => {
        onSpawn(child);
        await up;
        return { child, stop: async () => void ((stopped = true), child.kill("SIGTERM"), await exited(child)) };
      })
      .then(() => (handed = true));
    const running = teardown.run(); // teardown begins while it starts: its group is ended
    ready();
    await running;
    expect(await exited(child)).toBe("SIGTERM");
    await new Promise((resolve) => setImmediate(resolve));
    expect(handed).toBe(false); // the script never gets it, so it goes no further
    expect(stopped).toBe(true); // start() stopped it as it came up
  });
});

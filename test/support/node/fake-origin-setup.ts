import type { TestProject } from "vitest/node";
import { startFakeOrigin } from "./fake-origin.ts";

export default async function setup(project: TestProject) {
  const origin = await startFakeOrigin();
  project.provide("fakeOriginPort", origin.port);
  return () => origin.close();
}

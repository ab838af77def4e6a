// Vitest globalSetup (Node) for the `edge` project: builds one Snippet per shared-case policy into dist/test/
// (vitest.config.ts loads them into workerd), and builds the deployable configurations of wrangler.toml in
// memory so that test/edge/snippet.test.ts can assert every one of them fits in a Snippet.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "smol-toml";
import type { TestProject } from "vitest/node";
import { bannerFor, buildSnippet, writeSnippet } from "../../scripts/lib/snippet-bundle.ts";
import { readWranglerVars } from "../../scripts/lib/wrangler-vars.ts";
import { SNIPPET_TEST_BUILDS, type SnippetBuildReport } from "./snippet-test-vars.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export default async function setup(project: TestProject) {
  const reports: SnippetBuildReport[] = [];
  for (const test of SNIPPET_TEST_BUILDS) {
    // A test policy the worker refuses is a bug in the table: let it fail the run with its message.
    const snippet = await buildSnippet({ vars: test.vars, originToken: test.originToken, banner: bannerFor(`test policy ${test.policy}`) });
    writeSnippet(resolve(ROOT, test.outfile), snippet);
    reports.push({ name: `test policy ${test.policy}`, bytes: snippet.bytes, gzipBytes: snippet.gzipBytes, inputs: snippet.inputs });
  }

  const configPath = resolve(ROOT, "wrangler.toml");
  const config = parse(readFileSync(configPath, "utf8")) as { env?: Record<string, unknown> };
  for (const envName of [undefined, ...Object.keys(config.env ?? {})]) {
    const name = envName ? `wrangler.toml [env.${envName}]` : "wrangler.toml [vars]";
    try {
      const snippet = await buildSnippet({ vars: readWranglerVars(configPath, envName), banner: bannerFor(name) });
      reports.push({ name, bytes: snippet.bytes, gzipBytes: snippet.gzipBytes, inputs: snippet.inputs });
    } catch (error) {
      reports.push({ name, bytes: 0, gzipBytes: 0, inputs: [], error: error instanceof Error ? error.message : String(error) });
    }
  }
  project.provide("snippetBuilds", reports);
}

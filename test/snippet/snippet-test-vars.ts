// The Snippet builds the workerd tests run: one per policy of the shared edge cases, since a Snippet's
// configuration is baked in. Built by test/snippet/build-snippets-setup.ts into dist/test/ (the real
// dist/snippet.js is never touched), loaded by vitest.config.ts as auxiliary workers, reached from the tests
// through a service binding each. Pure data: imported by the Node setup, vitest.config.ts and workerd tests.
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { EDGE_POLICIES, type PolicyName } from "../shared/edge-cases.ts";

/**
 * Requests to a test Snippet go to `https://SCENARIO.${SNIPPET_ZONE_HOST}/...`; its one `fetch` continues to
 * the same host, where the zone-origin worker (test/snippet/zone-origin-worker.js) stands in for the zone's
 * origin and routes it to that scenario on the fake origin. A request reaching the right scenario therefore
 * also proves the Snippet kept the incoming host (on Cloudflare: continued to the zone's origin).
 */
export const SNIPPET_ZONE_HOST = "zone.slim-edge.test";

export interface SnippetTestBuild {
  policy: PolicyName;
  vars: EdgeVars;
  /** Baked in like `--bake-origin-token` does, from the policy's ORIGIN_TOKEN (the Worker gets it as a var). */
  originToken: string;
  /** Relative to the project root. */
  outfile: string;
  /** Auxiliary worker name and the test runner's service binding to it. */
  worker: string;
  binding: string;
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

export const SNIPPET_TEST_BUILDS: readonly SnippetTestBuild[] = (Object.keys(EDGE_POLICIES) as PolicyName[]).map((policy) => {
  const vars: EdgeVars = EDGE_POLICIES[policy];
  return {
    policy,
    vars,
    originToken: vars.ORIGIN_TOKEN ?? "",
    outfile: `dist/test/snippet-${kebab(policy)}.js`,
    worker: `snippet-${kebab(policy)}`,
    binding: `SNIPPET_${kebab(policy).replace(/-/g, "_").toUpperCase()}`,
  };
});

export function snippetTestBuild(policy: PolicyName): SnippetTestBuild {
  return SNIPPET_TEST_BUILDS.find((build) => build.policy === policy)!;
}

/** What the setup reports about each Snippet it built: the test builds and the deployable configurations. */
export interface SnippetBuildReport {
  /** "test policy allowList", "wrangler.toml [vars]", "wrangler.toml [env.staging]". */
  name: string;
  bytes: number;
  gzipBytes: number;
  /** Source files bundled, relative to the project root. */
  inputs: string[];
  /** Why a deployable configuration did not build (a refused configuration); absent when it built. */
  error?: string;
}

declare module "vitest" {
  interface ProvidedContext {
    /** Port of the loopback fake origin (test/support/node/fake-origin-setup.ts). */
    fakeOriginPort: number;
    /** From test/snippet/build-snippets-setup.ts. */
    snippetBuilds: SnippetBuildReport[];
  }
}

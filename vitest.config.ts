import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { parse } from "smol-toml";
import { defineConfig } from "vitest/config";
import { SNIPPET_TEST_BUILDS } from "./test/snippet/snippet-test-vars.ts";

const root = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const { compatibility_date: compatibilityDate } = parse(readFileSync(root("./wrangler.toml"), "utf8")) as { compatibility_date: string };

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => {
            const fakeOrigin = `http://127.0.0.1:${inject<number>("fakeOriginPort")}`;
            return {
              main: "./src/edge/worker.ts",
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: { FAKE_ORIGIN: fakeOrigin },
                // The built Snippets (test/snippet/build-snippets-setup.ts), one per shared-case policy, each
                // reached through a service binding; their fetch() goes to the zone-origin stand-in.
                serviceBindings: Object.fromEntries(SNIPPET_TEST_BUILDS.map((build) => [build.binding, build.worker])),
                workers: [
                  ...SNIPPET_TEST_BUILDS.map((build) => ({
                    name: build.worker,
                    modules: true,
                    scriptPath: root(`./${build.outfile}`),
                    compatibilityDate,
                    outboundService: "zone-origin",
                  })),
                  {
                    name: "zone-origin",
                    modules: true,
                    scriptPath: root("./test/snippet/zone-origin-worker.js"),
                    compatibilityDate,
                    bindings: { FAKE_ORIGIN: fakeOrigin },
                  },
                ],
              },
            };
          }),
        ],
        test: {
          name: "edge",
          include: ["test/edge/**/*.test.ts"],
          globalSetup: ["test/support/node/fake-origin-setup.ts", "test/snippet/build-snippets-setup.ts"],
        },
      },
      {
        test: {
          name: "node",
          include: ["test/origin/**/*.test.ts", "test/node/**/*.test.ts"],
          environment: "node",
          // These tests start real processes and throwaway PostgreSQL clusters; on a loaded CI machine a
          // start alone can take seconds. A bound, not a timing: no test asserts how fast anything is.
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "snippet-scripts",
          include: ["test/snippet/**/*.test.ts"],
          environment: "node",
        },
      },
    ],
  },
});

import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            main: "./src/edge/worker.ts",
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: { FAKE_ORIGIN: `http://127.0.0.1:${inject<number>("fakeOriginPort")}` },
            },
          })),
        ],
        test: {
          name: "edge",
          include: ["test/edge/**/*.test.ts"],
          globalSetup: ["test/support/node/fake-origin-setup.ts"],
        },
      },
      {
        test: {
          name: "node",
          include: ["test/origin/**/*.test.ts", "test/node/**/*.test.ts"],
          environment: "node",
        },
      },
    ],
  },
});

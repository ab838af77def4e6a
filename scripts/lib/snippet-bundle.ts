// Builds the Cloudflare Snippet (src/snippet/snippet.ts) into one ES module with the configuration baked in.
// Shared by scripts/build-snippet.ts, scripts/deploy-snippet.ts and the test setup that builds the Snippets
// the workerd tests run (test/snippet/build-snippets-setup.ts).
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build, type Plugin } from "esbuild";
import type { EdgeVars } from "../../src/edge/config/edge-vars.ts";
import { parseEdgeConfig, type EdgeSpec } from "../../src/edge/config/parse-edge-config.ts";
import type { BakedConfig } from "../../src/snippet/baked-config.ts";
import { SNIPPET_LIMIT_BYTES } from "../../src/snippet/limits.ts";

export { SNIPPET_LIMIT_BYTES };

const ENTRY = fileURLToPath(new URL("../../src/snippet/snippet.ts", import.meta.url));
const PLACEHOLDER = fileURLToPath(new URL("../../src/snippet/baked-config.ts", import.meta.url));

export interface SnippetBuildOptions {
  /** The worker's vars (as readWranglerVars returns them), validated here with the worker's own rules. */
  vars: EdgeVars;
  /** Baked into the bundle and sent in `x-origin-token`; omitted or empty: no token. */
  originToken?: string;
  /** One comment line at the top of the bundle, e.g. which configuration it was built from. */
  banner?: string;
}

export interface SnippetBuild {
  code: string;
  bytes: number;
  gzipBytes: number;
  /** The validated configuration (the CORS part is what was baked). */
  spec: EdgeSpec;
  /** Source files in the bundle, relative to the project root: what a reviewer can check for strays. */
  inputs: string[];
}

/**
 * Validates `vars` (throws the ConfigError that `npm run check` prints) and bundles the Snippet in memory:
 * minified ESM with `export default { fetch }`. The size limit is the caller's to enforce.
 */
export async function buildSnippet(options: SnippetBuildOptions): Promise<SnippetBuild> {
  const spec = parseEdgeConfig(options.vars);
  const baked: BakedConfig = { cors: spec.cors, originToken: options.originToken ?? "" };
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    target: "es2023",
    legalComments: "none",
    charset: "utf8",
    write: false,
    outfile: "snippet.js",
    metafile: true,
    logLevel: "silent",
    banner: options.banner ? { js: `// ${options.banner.replace(/[\r\n]+/g, " ")}` } : undefined,
    plugins: [bakeConfig(baked)],
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error("esbuild produced no output for the Snippet");
  const code = output.text;
  const inputs = Object.keys(result.metafile.inputs);
  if (inputs.some((input) => input.endsWith("src/snippet/baked-config.ts"))) {
    throw new Error("the Snippet bundle contains the unbaked config placeholder");
  }
  return { code, bytes: output.contents.byteLength, gzipBytes: gzipSync(output.contents, { level: 9 }).byteLength, spec, inputs };
}

/** The comment line a Snippet starts with: where its configuration came from. */
export function bannerFor(where: string): string {
  return `slim-edge Snippet from ${where}; built by npm run build:snippet, do not edit`;
}

/** Writes a build to `outfile` (creating its directory). */
export function writeSnippet(outfile: string, snippet: SnippetBuild): void {
  mkdirSync(dirname(outfile), { recursive: true });
  writeFileSync(outfile, snippet.code);
}

/** Removes a stale build, so an oversized or refused build never leaves an old file to be deployed. */
export function removeSnippet(outfile: string): void {
  rmSync(outfile, { force: true });
}

/** Replaces src/snippet/baked-config.ts with the validated configuration as a JSON literal. */
function bakeConfig(baked: BakedConfig): Plugin {
  return {
    name: "slim-edge-baked-config",
    setup(build) {
      build.onResolve({ filter: /\/baked-config\.ts$/ }, (args) => {
        return resolve(args.resolveDir, args.path) === PLACEHOLDER ? { path: "baked-config", namespace: "slim-edge-baked" } : undefined;
      });
      build.onLoad({ filter: /.*/, namespace: "slim-edge-baked" }, () => ({
        contents: `export const BAKED_CONFIG = ${JSON.stringify(baked)};`,
        loader: "js",
      }));
    },
  };
}

/** "28,512 bytes (gzip 4,912): 87.0% of the 32,768-byte Snippet limit, 4,256 to spare" */
export function describeSize(snippet: Pick<SnippetBuild, "bytes" | "gzipBytes">): string {
  const n = (value: number) => value.toLocaleString("en-US");
  const share = ((snippet.bytes / SNIPPET_LIMIT_BYTES) * 100).toFixed(1);
  const room = SNIPPET_LIMIT_BYTES - snippet.bytes;
  return `${n(snippet.bytes)} bytes (gzip ${n(snippet.gzipBytes)}): ${share}% of the ${n(SNIPPET_LIMIT_BYTES)}-byte Snippet limit, ${
    room >= 0 ? `${n(room)} to spare` : `${n(-room)} over`
  }`;
}

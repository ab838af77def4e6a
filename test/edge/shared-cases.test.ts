// The shared edge cases (test/shared/edge-cases.ts) against the Worker; test/edge/snippet.test.ts runs the
// same table against the built Snippet.
import { describe, it } from "vitest";
import { checkEdgeCase, requestInit } from "../shared/check-edge-case.ts";
import { EDGE_CASES, EDGE_POLICIES } from "../shared/edge-cases.ts";
import { callEdge } from "./support/edge.ts";

describe("shared edge cases: the Worker", () => {
  it.each(EDGE_CASES)("$name", (edgeCase) =>
    checkEdgeCase(edgeCase, (c, origin) => callEdge({ ...EDGE_POLICIES[c.policy], ORIGIN_URL: origin.url }, c.request.path, requestInit(c.request))),
  );
});

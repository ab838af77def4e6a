import { expect, it } from "vitest";
import { BUDGET_CASES, BUDGET_VARS, corsWireBytes } from "../../scripts/lib/cors-budget-cases.ts";
import { callEdge, fakeOrigin } from "./support/edge.ts";

it.each(BUDGET_CASES)("$name sends exactly $budget bytes of CORS headers (the budget)", async ({ method, headers, budget }) => {
  const origin = await fakeOrigin();
  const res = await callEdge({ ...BUDGET_VARS, ORIGIN_URL: origin.url }, "/items/1", { method, headers });
  expect(corsWireBytes(res.headers)).toBe(budget);
});

import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";

it("reaches the origin", async () => {
  const res = await exports.default.fetch("http://edge.test/items/1");
  expect(await res.json()).toEqual({ url: "/items/1", method: "GET" });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileOriginMatcher } from "../../src/edge/cors/origin-matcher.ts";

const PATTERN = { prefix: "https://", suffix: ".example.com" };
const matches = compileOriginMatcher(["https://app.example.org"], [PATTERN]);

describe("origin matcher", () => {
  it.each([
    ["https://a.example.com", true],
    ["https://a.b.example.com", true],
    ["https://x-1.example.com", true],
    ["https://app.example.org", true],
    ["https://example.com", false],
    ["https://.example.com", false],
    ["https://a..example.com", false],
    ["https://a.example.com.", false],
    ["https://evil-example.com", false],
    ["https://a.example.com.evil.net", false],
    ["http://a.example.com", false],
    ["https://a.example.com:8443", false],
    ["https://A.example.com", false],
    ["https://-a.example.com", false],
    ["https://a_b.example.com", false],
    ["https://user@a.example.com", false],
    ["https://a.example.com/", false],
    ["https://app.example.org/", false],
    ["null", false],
    ["", false],
  ])("%s → %s", (origin, expected) => {
    expect(matches(origin)).toBe(expected);
  });

  it("keeps the pattern's port", () => {
    const withPort = compileOriginMatcher([], [{ prefix: "https://", suffix: ".example.com:8443" }]);
    expect(withPort("https://a.example.com:8443")).toBe(true);
    expect(withPort("https://a.example.com")).toBe(false);
    expect(withPort("https://a.example.com:8444")).toBe(false);
  });

  // An independent oracle through the URL parser: a browser's Origin for a subdomain of example.com.
  function oracle(origin: string): boolean {
    if (origin === "https://app.example.org") return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.origin !== origin || url.protocol !== "https:" || url.port !== "") return false;
    if (!url.hostname.endsWith(".example.com")) return false;
    const labels = url.hostname.slice(0, -".example.com".length).split(".");
    return labels.every((label) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(label));
  }

  it("never allows an origin outside the policy (random origins built around the pattern)", () => {
    const label = fc.stringMatching(/^[a-zA-Z0-9_.-]{0,8}$/);
    const origin = fc
      .tuple(
        fc.constantFrom("https://", "http://", "HTTPS://", "wss://", "https:/", ""),
        fc.array(label, { maxLength: 4 }),
        fc.constantFrom(".example.com", "example.com", ".example.com.", ".example.com.evil.net", "-example.com", ".EXAMPLE.com", ".example.org", ".example.co"),
        fc.constantFrom("", ":443", ":8443", "/", "/x", "?q", "#f", "@"),
      )
      .map(([scheme, labels, domain, tail]) => `${scheme}${labels.join(".")}${domain}${tail}`);
    fc.assert(
      fc.property(origin, (candidate) => {
        if (matches(candidate)) expect(oracle(candidate), candidate).toBe(true);
        if (oracle(candidate)) expect(matches(candidate), candidate).toBe(true);
      }),
      { numRuns: 20_000 },
    );
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isJsonContentType } from "../../src/origin/http/body.ts";
import { checkAndMinifyJson, minifyJsonBytes } from "../../src/origin/http/json.ts";
import { ifNoneMatchMatches } from "../../src/shared/if-none-match.ts";
import { etagFor, randomEpoch } from "../../src/origin/store/etag.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

describe("ETags", () => {
  const epoch = fc.stringMatching(/^[0-9A-Za-z_-]{2}$/);
  it("are distinct for distinct (epoch, version) pairs, quoted, and short", () => {
    fc.assert(
      fc.property(epoch, epoch, fc.nat({ max: 2 ** 40 }), fc.nat({ max: 2 ** 40 }), (e, f, a, b) => {
        expect(etagFor(e, a) === etagFor(f, b)).toBe(e === f && a === b);
        expect(etagFor(e, a)).toMatch(/^"[0-9A-Za-z_-]+"$/);
      }),
    );
    expect(etagFor("Xa", 1)).toBe('"Xa1"');
    expect(etagFor("Xa", 63)).toBe('"Xa_"');
    expect(etagFor("Xa", 64)).toBe('"Xa10"');
    expect(etagFor("00", 4095).length).toBe(6);
    expect(etagFor("00", 4096).length).toBe(7);
    expect(() => etagFor("X", 1)).toThrow(RangeError);
    expect(() => etagFor("X\"", 1)).toThrow(RangeError);
  });
  it("epochs are 2 random base64url characters, all 4096 of them reachable", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 40_000; i++) {
      const e = randomEpoch();
      expect(e).toMatch(/^[0-9A-Za-z_-]{2}$/);
      seen.add(e);
    }
    expect(seen.size).toBeGreaterThan(4000); // 40,000 draws leave ~0.2 of the 4096 unseen on average
  });

  const opaque = fc.stringMatching(/^[!#-~]{0,8}$/);
  it("If-None-Match matches weakly whatever the list around it", () => {
    fc.assert(
      fc.property(epoch, fc.nat({ max: 1e6 }), fc.array(opaque), fc.array(opaque), fc.boolean(), (e, v, before, after, weak) => {
        const etag = etagFor(e, v);
        const tags = [...before.map((t) => `"${t}"`), `${weak ? "W/" : ""}${etag}`, ...after.map((t) => `W/"${t}"`)];
        expect(ifNoneMatchMatches(tags.join(" ,\t"), etag)).toBe(true);
      }),
    );
  });
  it("If-None-Match without our opaque tag never matches", () => {
    fc.assert(
      fc.property(epoch, fc.nat({ max: 1e6 }), fc.array(opaque), (e, v, others) => {
        const etag = etagFor(e, v);
        const list = others.filter((t) => `"${t}"` !== etag).map((t) => `"${t}"`);
        expect(ifNoneMatchMatches(list.join(", "), etag)).toBe(false);
      }),
    );
  });
  it("If-None-Match never throws on junk", () => {
    fc.assert(fc.property(fc.string(), (junk) => void ifNoneMatchMatches(junk, '"Xa1"')));
  });
});

describe("JSON bodies", () => {
  const spaced = fc
    .tuple(fc.jsonValue(), fc.constantFrom(0, 1, 2, "\t"))
    .map(([value, indent]) => JSON.stringify(value, null, indent as number | string));

  it("minify keeps the value and every token, removes only whitespace between tokens", () => {
    fc.assert(
      fc.property(spaced, (text) => {
        const check = checkAndMinifyJson(enc.encode(text));
        expect(check.ok).toBe(true);
        if (!check.ok) return;
        const out = dec.decode(check.minified);
        expect(JSON.parse(out)).toEqual(JSON.parse(text));
        expect(out).toBe(JSON.stringify(JSON.parse(text)));
        expect(dec.decode(minifyJsonBytes(check.minified))).toBe(out); // idempotent
      }),
    );
  });

  it("refuses what is not JSON", () => {
    for (const bad of ["", "{", "{'a':1}", "[1,]", "NaN", "\ufeff{}", "{} {}"]) {
      expect(checkAndMinifyJson(enc.encode(bad)).ok, JSON.stringify(bad)).toBe(false);
    }
  });

  it("content types", () => {
    for (const ok of ["application/json", "Application/JSON; charset=UTF-8", "application/merge-patch+json", 'application/json;charset="utf-8"']) {
      expect(isJsonContentType(ok), ok).toBe(true);
    }
    for (const bad of [undefined, "", "text/json", "text/plain", "application/json; charset=iso-8859-1", "application/jsonx"]) {
      expect(isJsonContentType(bad), String(bad)).toBe(false);
    }
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isJsonContentType } from "../../src/origin/body.ts";
import { checkAndMinifyJson, minifyJsonBytes } from "../../src/origin/json.ts";
import { etagFor, ifNoneMatchMatches } from "../../src/origin/wire.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

describe("ETags", () => {
  it("are distinct for distinct versions, quoted, and short", () => {
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 40 }), fc.nat({ max: 2 ** 40 }), (a, b) => {
        expect(etagFor(a) === etagFor(b)).toBe(a === b);
        expect(etagFor(a)).toMatch(/^"[0-9A-Za-z_-]+"$/);
      }),
    );
    expect(etagFor(1)).toBe('"1"');
    expect(etagFor(63)).toBe('"_"');
    expect(etagFor(64)).toBe('"10"');
    expect(etagFor(4095).length).toBe(4);
    expect(etagFor(4096).length).toBe(5);
  });

  const opaque = fc.stringMatching(/^[!#-~]{0,8}$/);
  it("If-None-Match matches weakly whatever the list around it", () => {
    fc.assert(
      fc.property(fc.nat({ max: 1e6 }), fc.array(opaque), fc.array(opaque), fc.boolean(), (v, before, after, weak) => {
        const etag = etagFor(v);
        const tags = [...before.map((t) => `"${t}"`), `${weak ? "W/" : ""}${etag}`, ...after.map((t) => `W/"${t}"`)];
        expect(ifNoneMatchMatches(tags.join(" ,\t"), etag)).toBe(true);
      }),
    );
  });
  it("If-None-Match without our opaque tag never matches", () => {
    fc.assert(
      fc.property(fc.nat({ max: 1e6 }), fc.array(opaque), (v, others) => {
        const etag = etagFor(v);
        const list = others.filter((t) => `"${t}"` !== etag).map((t) => `"${t}"`);
        expect(ifNoneMatchMatches(list.join(", "), etag)).toBe(false);
      }),
    );
  });
  it("If-None-Match never throws on junk", () => {
    fc.assert(fc.property(fc.string(), (junk) => void ifNoneMatchMatches(junk, '"1"')));
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

/**
 * Deterministic sample items (ids `1`…`N`) for local runs and benchmarks: small JSON objects of 70-120
 * bytes, the size class the service is built for. Same N → same bytes on every machine.
 */

const NAMES = ["widget", "gadget", "sprocket", "gizmo", "flange", "bracket", "valve", "spindle"];
const COLOURS = ["red", "green", "blue", "black", "white", "orange"];

const encoder = new TextEncoder();

export function sampleItem(n: number): string {
  // xorshift-style integer mix: stable, cheap, no Math.random.
  let h = Math.imul(n ^ 0x9e3779b9, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  const u = h >>> 0;
  const name = `${COLOURS[u % COLOURS.length]} ${NAMES[(u >>> 8) % NAMES.length]} ${n}`;
  const priceCents = 100 + (u % 99_900);
  const stock = (u >>> 12) % 500;
  return JSON.stringify({
    id: String(n),
    name,
    price: `${Math.floor(priceCents / 100)}.${String(priceCents % 100).padStart(2, "0")}`,
    stock,
    tags: [COLOURS[(u >>> 4) % COLOURS.length], NAMES[(u >>> 20) % NAMES.length]],
  });
}

export function* sampleItems(count: number): Generator<readonly [string, Uint8Array]> {
  for (let n = 1; n <= count; n++) yield [String(n), encoder.encode(sampleItem(n))];
}

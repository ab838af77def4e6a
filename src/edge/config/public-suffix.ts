import { getPublicSuffix } from "tldts";
import { edgeChild, edgeLength, edgeStart, labelText, rulesRoot } from "tldts/dist/es6/src/data/trie.js";

/**
 * True when `domain` is itself a public suffix (ICANN or private section of the Public Suffix List): `com`,
 * `co.uk`, `github.io`. A wildcard directly over one matches origins that anyone can register.
 */
export function isPublicSuffix(domain: string): boolean {
  return getPublicSuffix(domain, { allowPrivateDomains: true }) === domain;
}

let edgeOffsets: Uint32Array | undefined;

/**
 * A public suffix that lies strictly beneath `domain`, e.g. `s3.amazonaws.com` under `amazonaws.com` (`*`
 * stands for a wildcard rule), or undefined. A wildcard over such a domain also matches origins under that
 * suffix, which anyone can register. Walks the list's trie from the top-level label down; runs at
 * configuration time only.
 */
export function publicSuffixBeneath(domain: string): string | undefined {
  if (edgeOffsets === undefined) {
    edgeOffsets = new Uint32Array(edgeLength.length);
    for (let edge = 0, offset = 0; edge < edgeLength.length; edge++) {
      edgeOffsets[edge] = offset;
      offset += edgeLength[edge]!;
    }
  }
  const offsets = edgeOffsets;
  const labelOf = (edge: number) => labelText.slice(offsets[edge], offsets[edge]! + edgeLength[edge]!);
  let node = rulesRoot;
  for (const label of domain.split(".").reverse()) {
    let next = -1;
    for (let edge = edgeStart[node]!; edge < edgeStart[node + 1]!; edge++) {
      if (labelOf(edge) === label) next = edgeChild[edge]!;
    }
    if (next === -1) return undefined;
    node = next;
  }
  const first = edgeStart[node]!;
  return first < edgeStart[node + 1]! ? `${labelOf(first)}.${domain}` : undefined;
}

import { getPublicSuffix } from "tldts";

/**
 * True when `domain` is itself a public suffix (ICANN or private section of the Public Suffix List): `com`,
 * `co.uk`, `github.io`. A wildcard directly over one matches origins that anyone can register.
 */
export function isPublicSuffix(domain: string): boolean {
  return getPublicSuffix(domain, { allowPrivateDomains: true }) === domain;
}

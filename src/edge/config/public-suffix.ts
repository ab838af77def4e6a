// Public suffixes (the Public Suffix List, ICANN and private sections) for the CORS configuration check:
// a credentialed wildcard over a public suffix, or over a domain with one beneath it, lets anyone who
// registers a name there read users' data. Runs at configuration time only, never per request.
//
// Two copies of the list answer, each what the other cannot:
// - "is this domain itself a public suffix" (`com`, `github.io`): tldts's public getPublicSuffix, from the
//   list bundled in the pinned tldts release (refreshed by upgrading tldts).
// - "is there a public suffix beneath it" (`amazonaws.com` → `s3.amazonaws.com`): the committed table
//   public-suffix-beneath.generated.ts, which scripts/gen-public-suffix-beneath.ts builds from the list as
//   the PyPI package `publicsuffixlist` ships it, at the exact release pinned there (PSL_VERSION). The
//   package is released about weekly; the table is as fresh as the pinned release, and its header records
//   the release and the list's VERSION date, COMMIT and sha256. A suffix registered after that list is not
//   in the table, so a credentialed wildcard over the domain above it is not refused here, and one removed
//   since may still be refused. To refresh: bump PSL_VERSION to a newer release, run the generator
//   (`npm run gen:psl`) and commit the table (only the table: no copy of the list is committed). CI's
//   `--check` regenerates from the pinned release and fails when the committed table differs.
import { getPublicSuffix } from "tldts";
import { SUFFIXES_BENEATH } from "./public-suffix-beneath.generated.ts";

/**
 * True when `domain` is itself a public suffix (ICANN or private section of the Public Suffix List): `com`,
 * `co.uk`, `github.io`. A wildcard directly over one matches origins that anyone can register.
 */
export function isPublicSuffix(domain: string): boolean {
  return getPublicSuffix(domain, { allowPrivateDomains: true }) === domain;
}

/** SUFFIXES_BENEATH as a lookup, built on first use: domain → the labels in front of it. */
let beneath: Map<string, string> | undefined;

/**
 * A public suffix that lies strictly beneath `domain`, e.g. `s3.amazonaws.com` under `amazonaws.com` (`*.`
 * leads a wildcard rule: `*.compute.amazonaws.com`), or undefined. A wildcard over such a domain also
 * matches origins under that suffix, which anyone can register. `domain` is lowercase ASCII, as in an
 * Origin. From the committed table (only as fresh as the list it was generated from: see above).
 */
export function publicSuffixBeneath(domain: string): string | undefined {
  beneath ??= new Map(SUFFIXES_BENEATH.map((entry) => entry.split(" ") as [string, string]));
  const labels = beneath.get(domain);
  return labels === undefined ? undefined : `${labels}.${domain}`;
}

/**
 * Does a request carry credentials? Such a request never touches the shared edge cache: it is proxied as
 * is, so one user's answer is never stored for another. RFC 9111 §3.5 asks this for `Authorization`; a
 * `Cookie` gets the same treatment (a project rule, DESIGN.md), since an answer may depend on it without
 * saying so in `Vary`.
 */
export function carriesCredentials(headers: { has(name: string): boolean }): boolean {
  return headers.has("authorization") || headers.has("cookie");
}

/**
 * Does a request carry credentials? Such a request never touches the shared edge cache (RFC 9111 §3.5):
 * it is proxied as is, so one user's answer is never stored for another.
 */
export function carriesCredentials(headers: { has(name: string): boolean }): boolean {
  return headers.has("authorization") || headers.has("cookie");
}

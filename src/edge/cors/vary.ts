/**
 * Merges `origin` into `Vary` without duplicating it. Lowercase on purpose: `vary: origin` is a single
 * entry of HTTP/3's QPACK static table, and Vary's field names compare case-insensitively.
 */
export function addVaryOrigin(headers: Headers): void {
  const vary = headers.get("vary");
  if (vary === null || vary.trim() === "") {
    headers.set("Vary", "origin");
    return;
  }
  const fields = vary.split(",").map((field) => field.trim().toLowerCase());
  if (fields.includes("origin") || fields.includes("*")) return;
  headers.set("Vary", `${vary}, origin`);
}

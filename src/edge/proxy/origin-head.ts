// Browsers refuse response heads much past 256 KB and no item needs more than a few hundred bytes of
// headers: a head this large is a broken or hostile origin, answered with a small 502 instead of relayed.
export const MAX_ORIGIN_HEAD_BYTES = 32 * 1024;

/** True when the headers would take more than MAX_ORIGIN_HEAD_BYTES as HTTP/1.1 lines. */
export function originHeadTooLarge(headers: Headers): boolean {
  let bytes = 0;
  for (const [name, value] of headers) {
    bytes += name.length + value.length + 4;
    if (bytes > MAX_ORIGIN_HEAD_BYTES) return true;
  }
  return false;
}

/**
 * Item bodies are stored (and served on every read) minified: insignificant whitespace removed, every
 * token kept byte for byte. Numbers are not re-serialised, so 1.0, 1e3 and 64-bit integers survive
 * exactly as written; only the bytes between tokens go.
 */

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

export type JsonCheck = { ok: true; minified: Uint8Array } | { ok: false; reason: string };

/** Validates `bytes` as UTF-8 JSON text (RFC 8259) and returns it minified. */
export function checkAndMinifyJson(bytes: Uint8Array): JsonCheck {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return { ok: false, reason: "body is not valid UTF-8" };
  }
  if (text.charCodeAt(0) === 0xfeff) return { ok: false, reason: "body starts with a byte order mark" };
  try {
    JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `body is not valid JSON: ${(error as Error).message}` };
  }
  return { ok: true, minified: minifyJsonBytes(bytes) };
}

/**
 * Removes JSON whitespace (space, tab, CR, LF) outside strings. Input must be valid JSON; works on the
 * UTF-8 bytes directly (multi-byte sequences never contain ASCII bytes, so they pass through untouched).
 */
export function minifyJsonBytes(bytes: Uint8Array): Uint8Array {
  let needed = false;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      needed = true;
      break;
    }
  }
  if (!needed) return bytes;
  const out = new Uint8Array(bytes.length);
  let n = 0;
  inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      out[n++] = c;
      if (c === 0x5c) {
        out[n++] = bytes[++i]!;
      } else if (c === 0x22) {
        inString = false;
      }
    } else if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
      continue;
    } else {
      if (c === 0x22) inString = true;
      out[n++] = c;
    }
  }
  return out.slice(0, n);
}

// RFC 9110 §5.6.2: token = 1*tchar. Methods and header names are tokens; a value that is not one can never
// match what a browser sends, so configuration and preflights reject it instead of comparing against it.

/** tchar = ALPHA / DIGIT / one of these. */
const TCHAR_SYMBOLS = "!#$%&'*+-.^_`|~";

/** True for a char code that is a tchar. */
export function isTchar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c < 0x80 && TCHAR_SYMBOLS.includes(String.fromCharCode(c)));
}

export function isHttpToken(value: string): boolean {
  if (value.length === 0) return false;
  for (let i = 0; i < value.length; i++) if (!isTchar(value.charCodeAt(i))) return false;
  return true;
}

/** OWS = *( SP / HTAB ) (RFC 9110 §5.6.3). */
export function isOws(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

/** `value` without the OWS around it (a loop, not a regex: a hostile 64 KB run stays linear). */
export function withoutOws(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isOws(value.charCodeAt(start))) start++;
  while (end > start && isOws(value.charCodeAt(end - 1))) end--;
  return value.slice(start, end);
}

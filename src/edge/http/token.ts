// RFC 9110 §5.6.2: token = 1*tchar. Methods and header names are tokens; anything else can never match
// what a browser sends, so configuration and preflights reject it instead of comparing against it.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export function isToken(value: string): boolean {
  return TOKEN.test(value);
}

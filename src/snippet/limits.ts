/** Cloudflare's limit on a Snippet's total package size (https://developers.cloudflare.com/rules/snippets/#limits). */
export const SNIPPET_LIMIT_BYTES = 32_768;

// The shared secret between edge and origin travels in this request header. The worker and the Snippet set
// it, the origin checks it, and the internal-header list strips any copy a client sends (built in: a list
// without it must not be able to let a client supply the credential).
export const ORIGIN_TOKEN_HEADER = "x-origin-token";

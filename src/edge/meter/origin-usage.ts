/** What one edge request cost the origin, for the production egress meter. */
export interface OriginUsage {
  requestClass: string;
  /** 0 when the origin was not asked. */
  originStatus: number;
  /** Status line + header lines + blank line, as HTTP/1.1 would carry them. */
  headBytes: number;
  /** Counted as the body streams through; final when `bodyDone` resolves. */
  bodyBytes: number;
  bodyDone: Promise<void>;
}

export function newOriginUsage(requestClass: string): OriginUsage {
  return { requestClass, originStatus: 0, headBytes: 0, bodyBytes: 0, bodyDone: Promise.resolve() };
}

/** The HTTP/1.1 size of a response head. workerd does not expose wire bytes, so this is computed. */
export function headBytesOf(response: Response): number {
  let bytes = `HTTP/1.1 ${response.status} ${response.statusText}\r\n`.length + 2;
  for (const [name, value] of response.headers) bytes += name.length + value.length + 4;
  return bytes;
}

/**
 * Records an origin response in `usage` and returns its body, counted as it streams when somebody meters
 * (unchanged otherwise). The data point waits on `bodyDone`, so it settles however the stream ends: read to
 * the end, failed, or cancelled by a client that went away.
 */
export function meterOriginResponse(
  response: Response,
  usage: OriginUsage | undefined,
  requestClass: string,
): ReadableStream | null {
  if (!usage) return response.body;
  usage.requestClass = requestClass;
  usage.originStatus = response.status;
  usage.headBytes += headBytesOf(response);
  if (!response.body) return null;
  let finished!: () => void;
  usage.bodyDone = new Promise((resolve) => (finished = resolve));
  const reader = response.body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          finished();
          controller.close();
          return;
        }
        usage.bodyBytes += value.byteLength;
        controller.enqueue(value);
      } catch (error) {
        finished();
        controller.error(error);
      }
    },
    cancel(reason) {
      finished();
      return reader.cancel(reason);
    },
  });
}

// Runs one row of test/shared/edge-cases.ts against a deployment (the Worker or the built Snippet) inside
// workerd, with a fresh scenario on the recording fake origin, and checks the response and what reached the origin.
import { expect } from "vitest";
import { fakeOrigin, type FakeOrigin } from "../edge/support/edge.ts";
import type { EdgeCase, EdgeCaseRequest } from "./edge-cases.ts";

/** Sends the case's request through one deployment, whose item reads go to `origin`. */
export type EdgeTarget = (edgeCase: EdgeCase, origin: FakeOrigin) => Promise<Response>;

export function requestInit(request: EdgeCaseRequest): RequestInit {
  return { method: request.method ?? "GET", headers: request.headers ?? {} };
}

export async function checkEdgeCase(edgeCase: EdgeCase, send: EdgeTarget): Promise<void> {
  const { expect: expected } = edgeCase;
  const origin = await fakeOrigin(edgeCase.origin ?? {});
  const response = await send(edgeCase, origin);

  expect(response.status, "status").toBe(expected.status);
  const cors = Object.fromEntries([...response.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary"));
  expect(cors, "CORS headers").toEqual(expected.cors);
  for (const [name, value] of Object.entries(expected.headers ?? {})) {
    expect(response.headers.get(name), `response header ${name}`).toBe(value);
  }
  expect(await response.text(), "body").toBe(expected.body);

  const requests = await origin.requests();
  if (expected.forwarded === false) {
    expect(requests, "nothing reaches the origin").toEqual([]);
    return;
  }
  expect(requests, "exactly one request reaches the origin").toHaveLength(1);
  const [forwarded] = requests;
  expect(forwarded?.method, "forwarded method").toBe(expected.forwarded.method);
  expect(forwarded?.path, "forwarded path").toBe(expected.forwarded.path);
  for (const [name, value] of Object.entries(expected.forwarded.headers ?? {})) {
    const values = forwarded!.headers.filter(([sent]) => sent.toLowerCase() === name).map(([, sent]) => sent);
    expect(values, `forwarded header ${name}`).toEqual(value === null ? [] : [value]);
  }
}

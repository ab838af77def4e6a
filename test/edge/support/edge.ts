import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { EdgeVars } from "../../../src/edge/config/edge-vars.ts";
import worker from "../../../src/edge/worker.ts";
import type { RecordedRequest, Scenario } from "../../support/fake-origin-protocol.ts";

export type { RecordedRequest, Scenario };

export interface FakeOrigin {
  /** ORIGIN_URL for the worker: only this test's requests land under it. */
  url: string;
  /** Every request that reached the origin for this test, in order. */
  requests(): Promise<RecordedRequest[]>;
  /** Changes how the origin answers from now on (an item changed, a fault started). */
  answer(scenario: Scenario): Promise<void>;
}

/** A fresh scenario on the loopback fake origin, isolated from every other test by its unique base path. */
export async function fakeOrigin(scenario: Scenario = {}): Promise<FakeOrigin> {
  const name = crypto.randomUUID();
  const answer = async (next: Scenario) => {
    const control = await fetch(`${env.FAKE_ORIGIN}/__control/scenario/${name}`, {
      method: "POST",
      body: JSON.stringify(next),
    });
    if (control.status !== 204) throw new Error(`fake origin refused the scenario: ${control.status}`);
  };
  await answer(scenario);
  return {
    url: `${env.FAKE_ORIGIN}/t/${name}`,
    requests: async () => (await fetch(`${env.FAKE_ORIGIN}/__control/log/${name}`)).json<RecordedRequest[]>(),
    answer,
  };
}

export const ALLOW_LIST: EdgeVars = {
  CORS_ALLOW_ORIGINS: "https://app.example.com,https://*.preview.example.com",
  CORS_ALLOW_METHODS: "GET,HEAD,PUT",
  CORS_ALLOW_HEADERS: "content-type,x-request-id,authorization",
  CORS_EXPOSE_HEADERS: "etag",
};

/** Sends one request through the worker with these vars (on top of an origin), as workerd would. */
export async function callEdge(vars: EdgeVars, input: string, init?: RequestInit): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(new URL(input, "https://edge.example.net"), init), vars, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

/** Header names of a response that belong to CORS (Access-Control-* and Vary). */
export function corsHeaderNames(response: Response): string[] {
  return [...response.headers.keys()].filter((name) => name.startsWith("access-control-") || name === "vary");
}

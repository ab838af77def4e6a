// Test stand-in for "the zone's origin" behind a Snippet: every fetch a test Snippet makes lands here
// (its outboundService). The first label of the host names the fake-origin scenario, so
// https://SCENARIO.zone.slim-edge.test/items/1?q goes to FAKE_ORIGIN/t/SCENARIO/items/1?q with the method
// and headers exactly as the Snippet sent them. Redirects are returned, never followed.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const scenario = url.hostname.slice(0, url.hostname.indexOf("."));
    return fetch(new Request(`${env.FAKE_ORIGIN}/t/${scenario}${url.pathname}${url.search}`, request), { redirect: "manual" });
  },
};

export default {
  async fetch(request: Request, env: { ORIGIN_URL: string }): Promise<Response> {
    const url = new URL(request.url);
    return fetch(env.ORIGIN_URL + url.pathname);
  },
};

declare namespace Cloudflare {
  interface Env {
    /** Base URL of the recording fake origin started by test/support/node/fake-origin-setup.ts. */
    FAKE_ORIGIN: string;
  }
}

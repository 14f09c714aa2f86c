// Preloaded (NODE_OPTIONS=--require) into the conformance runner for the token pass:
// @modelcontextprotocol/conformance 0.1.12 has no option to send headers, so this wraps the
// global fetch and adds `Authorization: Bearer $LOMI_CONFORMANCE_TOKEN` to requests for the
// origin of $LOMI_CONFORMANCE_URL only. It prints one marker line to stderr the first time,
// so run.sh can tell that the token was really sent.
'use strict';
const token = process.env.LOMI_CONFORMANCE_TOKEN;
const base = process.env.LOMI_CONFORMANCE_URL;
if (token && base && typeof globalThis.fetch === 'function') {
  const origin = new URL(base).origin;
  const realFetch = globalThis.fetch;
  let announced = false;
  globalThis.fetch = function (input, init) {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (new URL(url).origin === origin) {
      const headers = new Headers(
        (init && init.headers) || (input instanceof Request ? input.headers : undefined),
      );
      headers.set('authorization', `Bearer ${token}`);
      init = { ...init, headers };
      if (!announced) {
        announced = true;
        process.stderr.write('lomi-bearer-shim: Authorization header added\n');
      }
    }
    return realFetch.call(this, input, init);
  };
}

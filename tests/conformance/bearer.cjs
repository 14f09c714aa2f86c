// Preloaded (NODE_OPTIONS=--require) into the conformance runner for the token passes: the
// runner has no option to send headers, so this adds `Authorization: Bearer
// $LOMI_CONFORMANCE_TOKEN` to requests for the origin of $LOMI_CONFORMANCE_URL only — those
// made through the global fetch and those made with node's http.request (the scenarios that
// send hand-made requests). It prints one marker line to stderr the first time, so run.sh can
// tell that the token was really sent.
'use strict';
const http = require('node:http');
const token = process.env.LOMI_CONFORMANCE_TOKEN;
const base = process.env.LOMI_CONFORMANCE_URL;
let announced = false;
function announce() {
  if (!announced) {
    announced = true;
    process.stderr.write('lomi-bearer-shim: Authorization header added\n');
  }
}
if (token && base) {
  const target = new URL(base);
  if (typeof globalThis.fetch === 'function') {
    const realFetch = globalThis.fetch;
    globalThis.fetch = function (input, init) {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (new URL(url).origin === target.origin) {
        const headers = new Headers(
          (init && init.headers) || (input instanceof Request ? input.headers : undefined),
        );
        headers.set('authorization', `Bearer ${token}`);
        init = { ...init, headers };
        announce();
      }
      return realFetch.call(this, input, init);
    };
  }
  // http.request(options[, cb]) or http.request(url[, options][, cb]).
  const realRequest = http.request;
  http.request = function (first, second, third) {
    const fromUrl = typeof first === 'string' || first instanceof URL;
    const options = fromUrl ? (typeof second === 'object' && second) || {} : first || {};
    const where = fromUrl ? new URL(first) : null;
    const host = where ? where.hostname : options.hostname || options.host;
    const port = String(where ? where.port : options.port || '');
    if (host === target.hostname && port === target.port) {
      const headers = { ...(options.headers || {}) };
      const already = Object.keys(headers).some((name) => name.toLowerCase() === 'authorization');
      if (!already) {
        headers.authorization = `Bearer ${token}`;
        announce();
      }
      if (fromUrl) {
        const rest = typeof second === 'function' ? [second] : third ? [third] : [];
        return realRequest.call(this, first, { ...options, headers }, ...rest);
      }
      return realRequest.call(this, { ...options, headers }, ...(second ? [second] : []));
    }
    return realRequest.apply(this, arguments);
  };
}

// node token-check.mjs URL TOKEN: prints the pairing state Lomi gives a session that sends this
// bearer token (lomi_pairing_status), so run.sh can tell that the token pass really runs as an
// approved pairing: Lomi treats an unknown token like no token (a new pending pairing).
const [url, token] = process.argv.slice(2);
const headers = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  authorization: `Bearer ${token}`,
};
async function post(body, sid) {
  const r = await fetch(url, {
    method: 'POST',
    headers: sid ? { ...headers, 'mcp-session-id': sid } : headers,
    body: JSON.stringify(body),
  });
  const text = await r.text();
  const line = text.split('\n').find((l) => l.startsWith('data: {'));
  return { sid: r.headers.get('mcp-session-id'), msg: line ? JSON.parse(line.slice(6)) : null };
}
const init = await post({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'token-check', version: '1' } },
});
await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, init.sid);
const status = await post(
  { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'lomi_pairing_status', arguments: {} } },
  init.sid,
);
await fetch(url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': init.sid } });
console.log(status.msg?.result?.structuredContent?.data?.state ?? 'unknown');

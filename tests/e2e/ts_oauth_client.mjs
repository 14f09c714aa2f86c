// An MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk from npm) that adds
// Lomi by URL alone and signs in the way the SDK's OAuth clients do: it connects, and when
// Lomi answers 401 the SDK discovers the metadata, registers (or, given a client ID metadata
// document URL, uses it as its client_id), and hands the authorization URL to
// redirectToAuthorization — here printed as a JSON line for the test's "browser". The
// browser's redirect reaches this process's loopback callback, the SDK exchanges the code,
// and the client connects again and lists the tools. Tokens and the client's registration are
// kept in a file, so a second run of this program is a relaunch with stored tokens.
//
//   node ts_oauth_client.mjs URL STATE_FILE [CLIENT_METADATA_URL]
//
// Prints JSON lines: {"authorize": URL} when it needs the person, then
// {"tools": [names], "signIns": N} or {"error": message}. Exits non-zero on an error.
import { createServer } from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const [url, stateFile, metadataUrl] = process.argv.slice(2);
if (!url || !stateFile) {
  console.error("usage: node ts_oauth_client.mjs URL STATE_FILE [CLIENT_METADATA_URL]");
  process.exit(2);
}
// The SDK is found where scripts/common.sh installed it (LOMI_MCP_TS_SDK: its node_modules).
const require = createRequire(`${process.env.LOMI_MCP_TS_SDK}/`);
const sdk = (path) => import(require.resolve(`@modelcontextprotocol/sdk/${path}`));
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { UnauthorizedError } = await sdk("client/auth.js");

const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
const load = () => {
  try {
    return JSON.parse(readFileSync(stateFile, "utf8"));
  } catch {
    return {};
  }
};
const state = load();
const save = () => writeFileSync(stateFile, JSON.stringify(state));

// The loopback callback the authorization server sends the browser back to.
let codeArrived;
const code = new Promise((resolve) => (codeArrived = resolve));
const callback = createServer((request, response) => {
  const query = new URL(request.url, "http://127.0.0.1").searchParams;
  response.end("You can close this page.");
  codeArrived(query);
});
await new Promise((resolve) => callback.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${callback.address().port}/callback`;

let signIns = 0;
const provider = {
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return {
      client_name: "ts-sdk-e2e",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientMetadataUrl: metadataUrl || undefined,
  clientInformation: () => state.client,
  saveClientInformation: (client) => {
    state.client = client;
    save();
  },
  tokens: () => state.tokens,
  saveTokens: (tokens) => {
    state.tokens = tokens;
    save();
  },
  redirectToAuthorization: (authorizationUrl) => {
    signIns += 1;
    say({ authorize: authorizationUrl.toString() });
  },
  saveCodeVerifier: (verifier) => {
    state.verifier = verifier;
    save();
  },
  codeVerifier: () => state.verifier,
};

async function connect() {
  const client = new Client({ name: "ts-sdk-e2e", version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const query = await code;
    if (!query.get("code")) throw new Error(`sign-in refused: ${query}`);
    await transport.finishAuth(query.get("code"));
    const again = new Client({ name: "ts-sdk-e2e", version: "0.0.0" });
    await again.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
    return again;
  }
}

let status = 0;
try {
  const client = await connect();
  const { tools } = await client.listTools();
  say({ tools: tools.map((tool) => tool.name), signIns, protocol: client.transport?.protocolVersion ?? null });
  await client.close();
} catch (error) {
  say({ error: String(error?.message ?? error), signIns });
  status = 1;
}
callback.close();
process.exit(status);

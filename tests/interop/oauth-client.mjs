// An MCP client that signs in the way the MCP authorization spec says,
// with the TypeScript SDK v2 client's own OAuth code, unmodified: a 401
// names the vhost's metadata, the SDK finds the authorization server,
// registers (RFC 7591), sends the user to authorize with PKCE and
// resource=<vhost URL>, and trades the code for tokens; it refreshes on
// its own when a token expires, and re-authorizes with more scope on a
// 403 insufficient_scope. The "browser" is the Go test: each
// authorization URL is printed as a JSON line {"authorize": URL}, and the
// redirect comes back to this process's callback server.
//
// Usage: node oauth-client.mjs BASE_URL. Prints one JSON line per step;
// waits for a line "go" on stdin before the step after a revocation.
import http from "node:http";
import readline from "node:readline";
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";

const [base] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const lines = readline.createInterface({ input: process.stdin });
const stdinLines = [];
let stdinWaiter = null;
lines.on("line", (l) => (stdinWaiter ? (stdinWaiter(l), (stdinWaiter = null)) : stdinLines.push(l)));
const nextLine = () => (stdinLines.length ? Promise.resolve(stdinLines.shift()) : new Promise((r) => (stdinWaiter = r)));

// The callback server: each redirect resolves the pending wait.
let callbackWaiter = null;
const server = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  res.end("You can close this window.");
  if (u.pathname === "/callback" && callbackWaiter) callbackWaiter(u.searchParams);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const redirectUrl = `http://127.0.0.1:${server.address().port}/callback`;

// An in-memory provider, as an app would keep its state.
class Provider {
  constructor(name) {
    this.name = name;
    this.data = {};
    this.authorizations = 0;
  }
  state() {
    return crypto.randomUUID();
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: "interop TS SDK client (" + this.name + ")",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.data.client;
  }
  saveClientInformation(c) {
    this.data.client = c;
  }
  tokens() {
    return this.data.tokens;
  }
  saveTokens(t) {
    this.data.tokens = t;
  }
  saveCodeVerifier(v) {
    this.data.verifier = v;
  }
  codeVerifier() {
    return this.data.verifier;
  }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") delete this.data.tokens;
    if (scope === "all" || scope === "client") delete this.data.client;
    if (scope === "all" || scope === "verifier") delete this.data.verifier;
  }
  redirectToAuthorization(u) {
    this.authorizations++;
    out({ authorize: u.toString(), vhost: this.name });
  }
}

// connected opens a client to vhost, signing in when asked.
async function connected(vhost, provider) {
  for (let i = 0; i < 3; i++) {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/servers/${vhost}/mcp`), { authProvider: provider });
    const client = new Client({ name: "interop-oauth", version: "1" });
    try {
      await client.connect(transport);
      return { client, transport };
    } catch (e) {
      if (!(e instanceof UnauthorizedError) && !String(e).includes("Unauthorized")) throw e;
      await finish(transport);
    }
  }
  throw new Error("could not sign in");
}

async function finish(transport) {
  const params = await new Promise((r) => (callbackWaiter = r));
  await transport.finishAuth(params);
}

// retrying runs fn, finishing a sign-in (step-up, re-authorization) when
// the SDK asked for one.
async function retrying(transport, fn) {
  for (let i = 0; i < 3; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof UnauthorizedError) && !String(e).includes("Unauthorized")) throw e;
      await finish(transport);
    }
  }
  throw new Error("still unauthorized");
}

const text = (r) => (r.content ?? []).map((c) => c.text ?? "").join("");
try {
  const pa = new Provider("a");
  const a = await connected("a", pa);
  out({ step: "a", tools: (await a.client.listTools()).tools.map((t) => t.name), echo: text(await a.client.callTool({ name: "echo", arguments: { text: "hi" } })) });
  // Step-up: increment needs scope admin; the SDK re-authorizes.
  const inc = await retrying(a.transport, () => a.client.callTool({ name: "increment", arguments: {} }));
  out({ step: "step-up", isError: inc.isError ?? false, scope: pa.data.tokens?.scope ?? "", authorizations: pa.authorizations });

  const pb = new Provider("b");
  const b = await connected("b", pb);
  out({ step: "b", tools: (await b.client.listTools()).tools.map((t) => t.name) });

  // Refresh: once the access token expires the SDK refreshes it.
  const before = pa.data.tokens.access_token;
  await new Promise((r) => setTimeout(r, Number(process.env.TOKEN_WAIT_MS ?? 16000)));
  const again = await retrying(a.transport, () => a.client.callTool({ name: "echo", arguments: { text: "again" } }));
  out({ step: "refresh", echo: text(again), rotated: pa.data.tokens.access_token !== before, authorizations: pa.authorizations,
    client_id: pa.data.client.client_id, refresh_token: pa.data.tokens.refresh_token });

  // Revocation: the test revokes the grant, then says go; the expired
  // token's refresh fails and the SDK must authorize again.
  await nextLine();
  await new Promise((r) => setTimeout(r, Number(process.env.TOKEN_WAIT_MS ?? 16000)));
  const n = pa.authorizations;
  const after = await retrying(a.transport, () => a.client.callTool({ name: "echo", arguments: { text: "after" } }));
  out({ step: "revoked", echo: text(after), reauthorized: pa.authorizations > n });
  await a.client.close();
  await b.client.close();
} catch (e) {
  out({ error: String(e?.stack ?? e) });
} finally {
  server.close();
  process.exit(0);
}

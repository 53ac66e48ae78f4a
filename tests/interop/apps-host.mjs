// A host as MCP Apps hosts work, with unmodified npm packages: the
// TypeScript SDK v2 client connects to the gateway (legacy: the 2025
// session protocol; modern: pinned to 2026-07-28), finds the app tool the
// way hosts do (ext-apps' getToolUiResourceUri), reads its UI resource,
// and calls the tool by the name the app's own HTML uses. Prints what it
// saw as one JSON line. Usage: node apps-host.mjs URL TOKEN legacy|modern
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";

const [url, token, mode] = process.argv.slice(2);
const client = new Client(
  { name: "interop-apps-host", version: "1" },
  {
    capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } },
    versionNegotiation: { mode: mode === "modern" ? { pin: "2026-07-28" } : "legacy" },
  },
);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const out = {};
try {
  await client.connect(transport);
  out.protocolVersion = client.protocolVersion ?? transport.protocolVersion ?? null;
  out.extensions = client.getServerCapabilities()?.extensions ?? null;
  const { tools } = await client.listTools();
  out.tools = tools.map((t) => t.name);
  const app = tools.find((t) => getToolUiResourceUri(t));
  out.appTool = app?.name ?? null;
  out.uiUri = app ? getToolUiResourceUri(app) : null;
  if (out.uiUri) {
    const read = await client.readResource({ uri: out.uiUri });
    const c = read.contents?.[0] ?? {};
    out.uiReadUri = c.uri ?? null;
    out.uiMime = c.mimeType ?? null;
    out.uiHTML = typeof c.text === "string" && c.text.includes("<html");
  }
  // What the app's HTML sends: callServerTool({name: "get-time"}).
  const call = await client.callTool({ name: "get-time", arguments: {} });
  out.rawCallError = call.isError ?? false;
  out.rawCallText = call.content?.[0]?.text ?? null;
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(0);

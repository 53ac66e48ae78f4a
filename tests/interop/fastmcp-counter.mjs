// A stateful FastMCP server (npm fastmcp, unmodified) for the backend
// sessions tests (tests/interop_fastmcp_test.go): the tool "count" counts
// its calls per MCP session with FastMCP's own per-session id
// (context.sessionId) and answers "<n> <session id>". Usage:
// node fastmcp-counter.mjs PORT
import { FastMCP } from "fastmcp";
import { z } from "zod";

const port = Number(process.argv[2]);
const counts = new Map();
const server = new FastMCP({ name: "fastmcp-counter", version: "1.0.0" });
server.addTool({
  name: "count",
  description: "Counts its calls in this MCP session and names the session.",
  parameters: z.object({}),
  execute: async (_args, context) => {
    const n = (counts.get(context.sessionId) ?? 0) + 1;
    counts.set(context.sessionId, n);
    return `${n} ${context.sessionId}`;
  },
});
await server.start({ transportType: "httpStream", httpStream: { port, host: "127.0.0.1", endpoint: "/mcp" } });
console.error(`fastmcp-counter listening on port ${port}`);

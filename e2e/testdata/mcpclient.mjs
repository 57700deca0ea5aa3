// mcpclient.mjs is a real MCP client for the tests of `crucible serve`: the
// official TypeScript SDK's Client, over stdio or Streamable HTTP, doing
// what an agent does (connect, list the tools and resources, search the
// tools, execute a program), so that the server is judged by the SDK that
// most agents use rather than by hand-written JSON-RPC.
//
//   node mcpclient.mjs [--query Q] [--lang L] [--save NAME CODE] [--code C] [--code2 C2] --http URL      (token: $CRUCIBLE_TOKEN)
//   node mcpclient.mjs [--query Q] [--lang L] [--save NAME CODE] [--code C] [--code2 C2] --stdio CMD ARGS...
//
// With --save, save_skill keeps CODE as the skill NAME before the first
// execute. With --code2, a second execute (step execute2) runs C2 in the
// first's workspace, passing back the handle the first returned.
//
// It prints one JSON line per step ({"step": ..., ...}) on stdout for the Go
// test to check, and on the first failure a line {"step", "error"} and exit
// status 1. With --stdio, the server runs with this process's environment
// (the SDK would otherwise pass it only HOME, PATH and a few others).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const args = process.argv.slice(2);
let query = "echo";
let code = `return await tools.everything.echo({ message: "hi" });`;
let code2;
let save;
let language;
let transport;
while (args.length > 0 && !transport) {
  const flag = args.shift();
  if (flag === "--query") {
    query = args.shift();
  } else if (flag === "--code") {
    code = args.shift();
  } else if (flag === "--save") {
    save = { name: args.shift(), code: args.shift(), description: "Saved by mcpclient." };
  } else if (flag === "--code2") {
    code2 = args.shift();
  } else if (flag === "--lang") {
    language = args.shift();
  } else if (flag === "--http") {
    const headers = { Authorization: `Bearer ${process.env.CRUCIBLE_TOKEN ?? ""}` };
    transport = new StreamableHTTPClientTransport(new URL(args.shift()), { requestInit: { headers } });
  } else if (flag === "--stdio") {
    transport = new StdioClientTransport({ command: args[0], args: args.slice(1), env: process.env, stderr: "inherit" });
  } else {
    console.error(`mcpclient: unknown argument ${flag}`);
    process.exit(2);
  }
}
if (!transport) {
  console.error("mcpclient: --http URL or --stdio CMD ARGS... is required");
  process.exit(2);
}

let step = "connect";
const out = (fields) => console.log(JSON.stringify({ step, ...fields }));

try {
  const client = new Client({ name: "crucible-test-client", version: "1.0.0" });
  await client.connect(transport);
  out({
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions() ?? "",
    session: transport.sessionId ?? "",
    pid: transport.pid ?? 0, // the server's, over stdio
  });

  // listTools parses every tool with the SDK's schemas and compiles each
  // output schema: a schema the SDK rejects fails here, as it would in an
  // agent.
  step = "list_tools";
  const { tools } = await client.listTools();
  for (const t of tools) {
    if (t.inputSchema?.type !== "object") {
      throw new Error(`tool ${t.name}: inputSchema.type is ${JSON.stringify(t.inputSchema?.type)}, not "object"`);
    }
  }
  out({ tools });

  if (client.getServerCapabilities()?.resources) {
    step = "list_resources";
    const { resources } = await client.listResources();
    out({ resources });
  }

  step = "search_tools";
  const found = await client.callTool({ name: "search_tools", arguments: { query } });
  out({ result: found });

  if (save !== undefined) {
    step = "save_skill";
    const saved = await client.callTool({ name: "save_skill", arguments: save });
    if (saved.isError) {
      throw new Error(`save_skill: ${JSON.stringify(saved.content)}`);
    }
    out({ result: saved });
  }

  // callTool checks structuredContent against the tool's output schema.
  step = "execute";
  let progress = 0;
  const ran = await client.callTool({ name: "execute", arguments: { code, language } }, undefined, {
    onprogress: ({ message }) => {
      progress++;
      console.log(JSON.stringify({ step: "progress", message }));
    },
  });
  out({ result: ran, progress });

  if (code2 !== undefined) {
    step = "execute2";
    const workspace = ran.structuredContent?.workspace;
    out({ result: await client.callTool({ name: "execute", arguments: { code: code2, language, workspace } }) });
  }

  step = "close";
  await client.close();
  out({});
} catch (err) {
  out({ error: String(err?.stack ?? err) });
  process.exit(1);
}

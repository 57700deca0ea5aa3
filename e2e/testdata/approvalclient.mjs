// approvalclient.mjs is the official TypeScript SDK's Client as a human
// behind an agent: it runs programs with crucible serve's execute, and
// answers the elicitations (approvals) the server sends while they run.
//
//   node approvalclient.mjs [--answers A,B,...] [--no-elicitation] --code C [--code C2 ...] --stdio CMD ARGS...
//
// Answers are given in turn, the last one from then on: accept, decline,
// cancel, or hang (no answer until the server gives up on it). Without
// elicitation the client declares no such capability. It prints one JSON
// line per execute: {"step": "execute", "index", "result", "shown"} (shown:
// the messages of the elicitations received during it), and on a failure
// {"step", "error"} and exit status 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const args = process.argv.slice(2);
let answers = ["accept"];
let elicitation = true;
const codes = [];
let transport;
while (args.length > 0 && !transport) {
  const flag = args.shift();
  if (flag === "--answers") {
    answers = args.shift().split(",");
  } else if (flag === "--no-elicitation") {
    elicitation = false;
  } else if (flag === "--code") {
    codes.push(args.shift());
  } else if (flag === "--stdio") {
    transport = new StdioClientTransport({ command: args[0], args: args.slice(1), env: process.env, stderr: "inherit" });
  } else {
    console.error(`approvalclient: unknown argument ${flag}`);
    process.exit(2);
  }
}
if (!transport) {
  console.error("approvalclient: --stdio CMD ARGS... is required");
  process.exit(2);
}

let step = "connect";
let shown = [];
try {
  const client = new Client(
    { name: "crucible-approval-client", version: "1.0.0" },
    { capabilities: elicitation ? { elicitation: { form: {} } } : {} },
  );
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
      shown.push(request.params.message);
      const answer = answers.length > 1 ? answers.shift() : answers[0];
      if (answer === "hang") {
        // Answered by no one: the server cancels the request when its
        // time is up, and the SDK then drops whatever comes of it.
        return new Promise((resolve) => extra.signal.addEventListener("abort", () => resolve({ action: "cancel" })));
      }
      return answer === "accept" ? { action: "accept", content: {} } : { action: answer };
    });
  }
  await client.connect(transport);
  for (const [index, code] of codes.entries()) {
    step = "execute";
    shown = [];
    const result = await client.callTool({ name: "execute", arguments: { code } });
    console.log(JSON.stringify({ step, index, result, shown }));
  }
  step = "close";
  await client.close();
} catch (err) {
  console.log(JSON.stringify({ step, error: String(err?.stack ?? err) }));
  process.exit(1);
}

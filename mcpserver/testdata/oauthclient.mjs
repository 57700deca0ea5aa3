// oauthclient.mjs is the official TypeScript SDK's Client authorized by
// OAuth as a machine client does (client_credentials): it connects to URL
// without a token, finds the server's Protected Resource Metadata from the
// 401, the issuer's metadata from it, gets a token from the issuer's token
// endpoint, and connects with it; then it searches the tools.
//
//   node oauthclient.mjs URL ISSUER CLIENT_ID CLIENT_SECRET
//
// It prints one JSON line: {"ok": true, "search": TEXT} or {"error": ...}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";

const [url, issuer, clientId, clientSecret] = process.argv.slice(2);
try {
  const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer: issuer, scope: "crucible" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
  const client = new Client({ name: "crucible-oauth-client", version: "1.0.0" });
  await client.connect(transport);
  const found = await client.callTool({ name: "search_tools", arguments: { query: "" } });
  console.log(JSON.stringify({ ok: true, search: found.content?.[0]?.text ?? "" }));
  await client.close();
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.stack ?? err) }));
  process.exit(1);
}

// The official MCP TypeScript SDK client (@modelcontextprotocol/sdk 1.x) driving
// `toolwire serve --http` over its Streamable HTTP client transport, in the 2025-11-25 era
// (initialize, an Mcp-Session-Id session, server→client requests on the response stream).
//
//   node sdk_http_client.mjs --url http://127.0.0.1:PORT/mcp --tmp DIR [--scenario tools|approval]
//
// The host serves examples/tools/echo_tools.py, tests/fixtures/interop_tools.py and
// tests/fixtures/modern_tools.py (and, for --scenario approval, runs with --approve echo).
// Exercises: initialize and the session, tools/list, tools/call, progress, an unknown tool
// (-32602), a client-side timeout (notifications/cancelled interrupts the tool), elicitation
// (a tool asks the user), a tools list change, DELETE ending the session; with
// --scenario approval: the host's approval form answered allow, then deny.

import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ErrorCode,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

import { Expectations, crash, finish, readMarker, settle, waitFor, within } from "./common.mjs";

const observed = {};

/** `--name value` options of the command line. */
function options(argv = process.argv.slice(2)) {
  const opts = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad option near ${argv[i]}`);
    opts[argv[i].slice(2)] = argv[i + 1];
  }
  if (!opts.url || !opts.tmp) throw new Error("usage: node sdk_http_client.mjs --url URL --tmp DIR [--scenario S]");
  return opts;
}

async function main() {
  const { url, tmp, scenario = "tools" } = options();
  const exp = new Expectations();
  // Every HTTP request the transport makes: method, the session headers, the status.
  const http = [];
  const fetchSpy = async (input, init) => {
    const headers = new Headers(init?.headers);
    const res = await fetch(input, init);
    http.push({
      method: init?.method ?? "GET",
      sessionId: headers.get("mcp-session-id"),
      protocolVersion: headers.get("mcp-protocol-version"),
      status: res.status,
      contentType: res.headers.get("content-type"),
    });
    return res;
  };
  observed.http = http;
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: fetchSpy });
  const sent = [];
  const origSend = transport.send.bind(transport);
  transport.send = (message, opts) => {
    sent.push(message);
    return origSend(message, opts);
  };

  const client = new Client(
    { name: "toolwire-interop-sdk-http", version: "1.0.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  const asked = [];
  observed.asked = asked;
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    if (req.params.requestedSchema?.properties?.decision) {
      const deny = req.params.message.includes('"no"');
      return { action: "accept", content: deny ? { decision: "deny", reason: "nope" } : { decision: "allow" } };
    }
    return { action: "accept", content: { name: "Ada" } };
  });
  const clientErrors = [];
  client.onerror = (err) => clientErrors.push(String(err?.message ?? err));
  const changes = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => {
    changes.push(n);
  });

  await within(client.connect(transport), 20, "initialize");
  const received = [];
  const origOnMessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    received.push(message);
    origOnMessage?.(message, extra);
  };
  observed.initializeRequest = sent.find((m) => m.method === "initialize");
  observed.serverVersion = client.getServerVersion();
  observed.sessionId = transport.sessionId;
  observed.protocolVersion = transport.protocolVersion;
  exp.equal("initialize: 2025-11-25 asked", observed.initializeRequest?.params?.protocolVersion, "2025-11-25");
  exp.equal("negotiated 2025-11-25", transport.protocolVersion, "2025-11-25");
  exp.expect("a session id was issued", typeof transport.sessionId === "string" && transport.sessionId.length > 0, transport.sessionId);
  exp.equal("serverInfo.name", observed.serverVersion?.name, "toolwire");

  if (scenario === "approval") {
    const yes = await within(client.callTool({ name: "echo", arguments: { text: "yes" } }), 20, "approved echo");
    exp.equal("approved call runs", yes.content, [{ type: "text", text: "yes" }]);
    const no = await within(client.callTool({ name: "echo", arguments: { text: "no" } }), 20, "denied echo");
    exp.equal("denied call: isError", no.isError, true);
    exp.equal("denied call: reason", no.content, [{ type: "text", text: "Call denied by the client: nope" }]);
    const free = await within(client.callTool({ name: "count", arguments: { n: 1 } }), 20, "count");
    exp.equal("a call the policy does not name runs unasked", free.content, [{ type: "text", text: "counted to 1" }]);
    exp.equal("one approval form per approved or denied call", asked.length, 2);
    const forms = received.filter((m) => m.method === "elicitation/create" && m.id !== undefined);
    exp.equal("the forms came as server→client requests", forms.length, 2);
    exp.equal("client reported no errors", clientErrors, []);
    await transport.terminateSession();
    await client.close();
    finish(exp, observed);
    return;
  }

  const listed = await within(client.listTools(), 10, "tools/list");
  observed.toolNames = listed.tools.map((t) => t.name);
  exp.equal("tool names in registration order", observed.toolNames.slice(0, 10), [
    "echo", "count", "nap", "snooze", "steps", "chatty", "add_tool", "ask_name", "ask_all", "ask_together",
  ]);

  const text = "héllo ✓ \u2028 line";
  const echoed = await within(client.callTool({ name: "echo", arguments: { text } }), 10, "echo");
  exp.equal("echo result", echoed, { content: [{ type: "text", text }] });

  // Progress: `steps` pauses after each report, so each one reaches onprogress before the
  // response (on HTTP they arrive on the call's SSE stream).
  const delivered = [];
  const stepped = await within(
    client.callTool({ name: "steps", arguments: { n: 3, gap_ms: 50 } }, undefined, { onprogress: (p) => delivered.push(p) }),
    10,
    "steps",
  );
  observed.progress = delivered;
  exp.equal("steps result", stepped.content, [{ type: "text", text: "3 steps" }]);
  exp.equal("progress values in order", delivered.map((p) => p.progress), [1, 2, 3]);
  exp.equal("progress message", delivered[0]?.message, "step 1");

  const unknown = await settle(within(client.callTool({ name: "no_such_tool", arguments: {} }), 10, "unknown"));
  observed.unknownTool = unknown;
  exp.equal("unknown tool: -32602", unknown.error?.code, ErrorCode.InvalidParams);

  // A request timeout: the SDK rejects with -32001 and POSTs notifications/cancelled.
  const marker = path.join(tmp, "http-nap-marker.txt");
  const timedOut = await settle(
    within(client.callTool({ name: "nap", arguments: { seconds: 30, marker } }, undefined, { timeout: 1000 }), 10, "nap"),
  );
  observed.timeout = timedOut;
  exp.equal("timeout: code -32001", timedOut.error?.code, ErrorCode.RequestTimeout);
  const napReq = sent.find((m) => m.method === "tools/call" && m.params?.name === "nap");
  const cancel = sent.find((m) => m.method === "notifications/cancelled");
  observed.cancelNotification = cancel;
  exp.equal("timeout: cancel names the request id", cancel?.params?.requestId, napReq?.id);
  const outcome = await waitFor(() => {
    const m = readMarker(marker);
    return m === "cancelled" || m === "finished" ? m : null;
  }, 5);
  observed.napMarker = readMarker(marker);
  exp.equal("timeout: the tool was interrupted", outcome, "cancelled");
  const after = await within(client.callTool({ name: "echo", arguments: { text: "still here" } }), 5, "echo after cancel");
  exp.equal("echo after cancel", after.content, [{ type: "text", text: "still here" }]);
  exp.equal("nothing received for the cancelled request", received.filter((m) => m.id === napReq?.id && !m.method), []);

  // Elicitation: the host asks on the call's response stream; the SDK answers with a POST.
  const hello = await within(client.callTool({ name: "ask_name", arguments: {} }), 20, "ask_name");
  exp.equal("elicitation round trip", hello.content, [{ type: "text", text: "hello Ada" }]);
  exp.equal("the question", asked[0]?.message, "What is your name?");
  exp.expect(
    "elicitation/create came as a server→client request",
    received.some((m) => m.method === "elicitation/create" && m.id !== undefined),
    received.map((m) => m.method ?? m.id),
  );

  // A tools list change (this era has no subscriptions/listen: the notification reaches the
  // session's streams).
  const added = await within(client.callTool({ name: "add_tool", arguments: { name: "late.http" } }), 10, "add_tool");
  exp.equal("add_tool result", added.content, [{ type: "text", text: "added" }]);
  await waitFor(() => changes.length > 0, 5);
  observed.changes = changes;
  exp.equal("tools list_changed delivered once", changes.length, 1);
  const relisted = await within(client.listTools(), 10, "tools/list again");
  exp.expect("the new tool is listed", relisted.tools.some((t) => t.name === "late.http"), relisted.tools.map((t) => t.name));
  const dyn = await within(client.callTool({ name: "late.http", arguments: {} }), 10, "late.http");
  exp.equal("the new tool answers", dyn.content, [{ type: "text", text: "dynamic" }]);

  const pong = await settle(within(client.ping(), 5, "ping"));
  exp.expect("ping answered", pong.error === undefined, pong);
  exp.equal("client reported no errors", clientErrors, []);

  // After initialize, every request names the session and the negotiated version.
  const sid = transport.sessionId;
  const later = http.slice(1);
  exp.expect("every request after initialize carries the session id", later.length > 0 && later.every((r) => r.sessionId === sid), http);
  exp.expect("every request after initialize carries MCP-Protocol-Version", later.every((r) => r.protocolVersion === "2025-11-25"), http);

  // DELETE ends the session; a request with the old id is refused (404).
  await within(transport.terminateSession(), 10, "DELETE session");
  const stale = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": sid,
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list", params: {} }),
  });
  observed.staleStatus = stale.status;
  exp.equal("the ended session is unknown: 404", stale.status, 404);
  await client.close();
  observed.sentMethods = sent.map((m) => m.method ?? `response:${m.id}`);
  finish(exp, observed);
}

main().catch((err) => crash(err, observed));

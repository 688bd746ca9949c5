// The official MCP TypeScript SDK v2 client (@modelcontextprotocol/client 2.x) driving
// `toolwire serve --http` over its Streamable HTTP client transport in the 2026-07-28
// (stateless) era: no initialize, no session, one HTTP request per JSON-RPC request.
//
//   node sdk2_http_client.mjs --url http://127.0.0.1:PORT/mcp --tmp DIR [--mode pin|auto] [--scenario tools|approval]
//
// The host serves examples/tools/echo_tools.py, tests/fixtures/interop_tools.py and
// tests/fixtures/modern_tools.py (and, for --scenario approval, runs with --approve echo).
// Exercises: the envelope on every request, tools/list, tools/call, progress, an unknown tool
// (-32602), a client-side timeout (notifications/cancelled interrupts the tool), elicitation
// over input-required rounds, subscriptions/listen with a tools list change; with --scenario
// approval: the host's approval form answered allow, then deny.

import path from "node:path";

import { Client, PROTOCOL_VERSION_META_KEY, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

import { Expectations, crash, finish, readMarker, settle, waitFor, within } from "./common.mjs";

const observed = {};

/** `--name value` options of the command line. */
function options(argv = process.argv.slice(2)) {
  const opts = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) throw new Error(`bad option near ${argv[i]}`);
    opts[argv[i].slice(2)] = argv[i + 1];
  }
  if (!opts.url || !opts.tmp) throw new Error("usage: node sdk2_http_client.mjs --url URL --tmp DIR [--mode M] [--scenario S]");
  return opts;
}

async function main() {
  const { url, tmp, mode: modeName = "pin", scenario = "tools" } = options();
  const exp = new Expectations();
  observed.mode = modeName;

  // Every HTTP request the transport makes: method, the MCP headers, the status.
  const http = [];
  const fetchSpy = async (input, init) => {
    const headers = new Headers(init?.headers);
    const res = await fetch(input, init);
    http.push({
      method: init?.method ?? "GET",
      mcpMethod: headers.get("mcp-method"),
      mcpName: headers.get("mcp-name"),
      protocolVersion: headers.get("mcp-protocol-version"),
      sessionId: headers.get("mcp-session-id"),
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

  const mode = modeName === "auto" ? "auto" : { pin: "2026-07-28" };
  const client = new Client(
    { name: "toolwire-interop-sdk2-http", version: "1.0.0" },
    { capabilities: { elicitation: {}, sampling: {}, roots: {} }, versionNegotiation: { mode } },
  );
  const asked = [];
  observed.asked = asked;
  client.setRequestHandler("elicitation/create", async (req) => {
    asked.push({ method: "elicitation/create", params: req.params });
    if (req.params.requestedSchema?.properties?.decision) {
      const deny = req.params.message.includes('"no"');
      return { action: "accept", content: deny ? { decision: "deny", reason: "nope" } : { decision: "allow" } };
    }
    return { action: "accept", content: { name: "Ada" } };
  });
  client.setRequestHandler("sampling/createMessage", async (req) => {
    asked.push({ method: "sampling/createMessage", params: req.params });
    return { role: "assistant", content: { type: "text", text: "Paris" }, model: "m" };
  });
  client.setRequestHandler("roots/list", async () => {
    asked.push({ method: "roots/list" });
    return { roots: [{ uri: "file:///w", name: "w" }] };
  });
  const clientErrors = [];
  client.onerror = (err) => clientErrors.push(String(err?.message ?? err));
  const changes = [];
  client.setNotificationHandler("notifications/tools/list_changed", (n) => {
    changes.push(n);
  });

  await within(client.connect(transport), 20, "connect");
  const received = [];
  const origOnMessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    received.push(message);
    origOnMessage?.(message, extra);
  };
  observed.serverVersion = client.getServerVersion();
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
    exp.expect("no request from the host on the wire", !received.some((m) => m.method && m.id !== undefined), received);
    exp.equal("client reported no errors", clientErrors, []);
    await client.close();
    finish(exp, observed);
    return;
  }

  const listed = await within(client.listTools(), 10, "tools/list");
  observed.toolNames = listed.tools.map((t) => t.name);
  exp.equal("tool names in registration order", observed.toolNames.slice(0, 10), [
    "echo", "count", "nap", "snooze", "steps", "chatty", "add_tool", "ask_name", "ask_all", "ask_together",
  ]);
  const listReq = sent.find((m) => m.method === "tools/list");
  exp.equal("tools/list carries the envelope", listReq?.params?._meta?.[PROTOCOL_VERSION_META_KEY], "2026-07-28");

  const text = "héllo ✓";
  const echoed = await within(client.callTool({ name: "echo", arguments: { text } }), 10, "echo");
  observed.echo = echoed;
  exp.equal("echo content", echoed.content, [{ type: "text", text }]);
  const echoResp = received.find((m) => m.id !== undefined && m.result?.content?.[0]?.text === text);
  exp.equal("echo resultType on the wire", echoResp?.result?.resultType, "complete");

  const delivered = [];
  const counted = await within(
    client.callTool({ name: "steps", arguments: { n: 3, gap_ms: 50 } }, { onprogress: (p) => delivered.push(p) }),
    10,
    "steps",
  );
  observed.progress = delivered;
  exp.equal("steps result", counted.content, [{ type: "text", text: "3 steps" }]);
  exp.equal("progress values in order", delivered.map((p) => p.progress), [1, 2, 3]);

  const unknown = await settle(within(client.callTool({ name: "no_such_tool", arguments: {} }), 10, "unknown"));
  observed.unknownTool = unknown;
  exp.equal("unknown tool: -32602", unknown.error?.code, -32602);

  const marker = path.join(tmp, "http2-nap-marker.txt");
  const timedOut = await settle(
    within(client.callTool({ name: "nap", arguments: { seconds: 30, marker } }, { timeout: 1000 }), 10, "nap"),
  );
  observed.timeout = timedOut;
  exp.expect("timeout: the call failed", timedOut.error !== undefined, timedOut);
  const outcome = await waitFor(() => {
    const m = readMarker(marker);
    return m === "cancelled" || m === "finished" ? m : null;
  }, 5);
  observed.napMarker = readMarker(marker);
  exp.equal("timeout: the tool was interrupted", outcome, "cancelled");
  const after = await within(client.callTool({ name: "echo", arguments: { text: "still here" } }), 5, "echo after cancel");
  exp.equal("echo after cancel", after.content, [{ type: "text", text: "still here" }]);

  // subscriptions/listen: acknowledged on its SSE stream, then a tagged tools list change.
  const sub = await within(client.listen({ toolsListChanged: true }), 10, "listen");
  observed.honored = sub.honoredFilter;
  exp.equal("listen: honoured filter", sub.honoredFilter, { toolsListChanged: true });
  const added = await within(client.callTool({ name: "add_tool", arguments: { name: "late.ts" } }), 10, "add_tool");
  exp.equal("add_tool result", added.content, [{ type: "text", text: "added" }]);
  await waitFor(() => changes.length > 0, 5);
  observed.changes = changes;
  exp.equal("listen: list_changed delivered once", changes.length, 1);
  const wireChange = received.find((m) => m.method === "notifications/tools/list_changed");
  const listenReq = sent.find((m) => m.method === "subscriptions/listen");
  exp.equal(
    "listen: notification tagged with the subscription id",
    wireChange?.params?._meta?.["io.modelcontextprotocol/subscriptionId"],
    listenReq?.id,
  );
  await sub.close();
  const relisted = await within(client.listTools({}, { cacheMode: "bypass" }), 10, "tools/list again");
  exp.expect("the new tool is listed", relisted.tools.some((t) => t.name === "late.ts"), relisted.tools.map((t) => t.name));
  const dyn = await within(client.callTool({ name: "late.ts", arguments: {} }), 10, "late.ts");
  exp.equal("the new tool answers", dyn.content, [{ type: "text", text: "dynamic" }]);

  // Tools that ask: one question per input-required round, answered by the handlers.
  const hello = await within(client.callTool({ name: "ask_name", arguments: {} }), 20, "ask_name");
  exp.equal("elicitation round trip", hello.content, [{ type: "text", text: "hello Ada" }]);
  const all = await within(
    client.callTool({ name: "ask_all", arguments: { runs: path.join(tmp, "ts-http-runs") } }),
    20,
    "ask_all",
  );
  exp.equal("elicitation, sampling and roots over three rounds", all.content, [{ type: "text", text: "Ada / Paris / file:///w" }]);
  exp.equal("questions in order", asked.map((a) => a.method), [
    "elicitation/create", "elicitation/create", "sampling/createMessage", "roots/list",
  ]);
  exp.expect("no request from the host on the wire", !received.some((m) => m.method && m.id !== undefined), received);

  exp.equal("client reported no errors", clientErrors, []);
  exp.expect("no initialize on the wire", !sent.some((m) => m.method === "initialize"), sent.map((m) => m.method));
  exp.expect(
    "every request carries the 2026-07-28 envelope",
    sent.filter((m) => m.id !== undefined && m.method).every((m) => m.params?._meta?.[PROTOCOL_VERSION_META_KEY] === "2026-07-28"),
    sent,
  );
  const posts = http.filter((r) => r.method === "POST" && r.mcpMethod);
  exp.expect("every request POST names its method in Mcp-Method", posts.length > 0, http);
  exp.expect("no session id on any request", http.every((r) => r.sessionId === null), http);
  exp.expect("every request POST has MCP-Protocol-Version 2026-07-28", posts.every((r) => r.protocolVersion === "2026-07-28"), posts);
  await client.close();
  observed.sentMethods = sent.map((m) => m.method ?? `response:${m.id}`);
  finish(exp, observed);
}

main().catch((err) => crash(err, observed));

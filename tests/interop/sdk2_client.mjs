// The official MCP TypeScript SDK v2 client (@modelcontextprotocol/client 2.x) driving the toolwire
// host over stdio in the 2026-07-28 (stateless) era.
//
//   node sdk2_client.mjs --tmp DIR --mode pin|auto -- PYTHON -m toolwire.host --no-builtins \
//       --tools examples/tools/echo_tools.py tests/fixtures/interop_tools.py tests/fixtures/modern_tools.py
//
// --mode pin: versionNegotiation {pin: "2026-07-28"}; auto: versionNegotiation "auto" (the SDK
// probes server/discover on a sibling process, then starts the real one).
// Exercises: the per-request envelope on every request (no initialize), tools/list, tools/call,
// progress, an unknown tool (-32602), a client-side timeout (notifications/cancelled interrupts
// the tool), subscriptions/listen with a tools list change, closing stdin.

import path from "node:path";

import { Client, PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

import { Expectations, crash, finish, parseArgv, readMarker, settle, waitFor, within } from "./common.mjs";

const observed = {};

async function main() {
  const argv = process.argv.slice(2);
  const option = (name, fallback) => {
    const at = argv.indexOf(name);
    if (at < 0) return fallback;
    const value = argv[at + 1];
    argv.splice(at, 2);
    return value;
  };
  const modeName = option("--mode", "pin");
  const scenario = option("--scenario", "tools");
  const { tmp, command, args } = parseArgv(argv);
  const exp = new Expectations();
  observed.mode = modeName;

  const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
  const sent = [];
  const origSend = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return origSend(message, options);
  };

  const mode = modeName === "auto" ? "auto" : { pin: "2026-07-28" };
  const client = new Client(
    { name: "toolwire-interop-sdk2", version: "1.0.0" },
    { capabilities: { elicitation: {}, sampling: {}, roots: {} }, versionNegotiation: { mode } },
  );
  // What a tool asks arrives as input-required results; the SDK answers them through the
  // request handlers and retries the call.
  const asked = [];
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
  observed.asked = asked;
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
    await client.close();
    finish(exp, observed);
    return;
  }

  // The SDK probes server/discover on a short-lived sibling process, so nothing has been
  // sent on this connection yet.
  exp.equal("nothing sent on the connection by connect()", sent, []);
  observed.serverVersion = client.getServerVersion();
  exp.equal("serverInfo.name", observed.serverVersion?.name, "toolwire");

  const listed = await within(client.listTools(), 10, "tools/list");
  observed.toolNames = listed.tools.map((t) => t.name);
  exp.equal("tool names in registration order", observed.toolNames, [
    "echo", "count", "nap", "snooze", "steps", "chatty", "add_tool", "ask_name", "ask_all", "ask_together", "append_note",
  ]);
  const listReq = sent[0];
  exp.equal("the first message is tools/list", listReq?.method, "tools/list");
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
  exp.expect("progress delivered in order", delivered.length >= 2 && delivered.every((p, i) => i === 0 || p.progress > delivered[i - 1].progress), delivered);

  const unknown = await settle(within(client.callTool({ name: "no_such_tool", arguments: {} }), 10, "unknown"));
  observed.unknownTool = unknown;
  exp.equal("unknown tool: -32602", unknown.error?.code, -32602);

  const marker = path.join(tmp, "nap2-marker.txt");
  const timedOut = await settle(
    within(client.callTool({ name: "nap", arguments: { seconds: 30, marker } }, { timeout: 1000 }), 10, "nap"),
  );
  observed.timeout = timedOut;
  exp.expect("timeout: the call failed", timedOut.error !== undefined, timedOut);
  const napReq = sent.find((m) => m.method === "tools/call" && m.params?.name === "nap");
  const cancel = sent.find((m) => m.method === "notifications/cancelled" && m.params?.requestId === napReq?.id);
  exp.expect("timeout: notifications/cancelled sent for the call", cancel !== undefined, sent.filter((m) => !m.id));
  const outcome = await waitFor(() => {
    const m = readMarker(marker);
    return m === "cancelled" || m === "finished" ? m : null;
  }, 5);
  exp.equal("timeout: the tool was interrupted", outcome, "cancelled");

  // subscriptions/listen: acknowledged, then a tagged tools list change.
  const sub = await within(client.listen({ toolsListChanged: true }), 10, "listen");
  observed.honored = sub.honoredFilter;
  exp.equal("listen: honoured filter", sub.honoredFilter, { toolsListChanged: true });
  const added = await within(client.callTool({ name: "add_tool", arguments: { name: "late.ts" } }), 10, "add_tool");
  exp.equal("add_tool result", added.content, [{ type: "text", text: "added" }]);
  await waitFor(() => changes.length > 0, 5);
  observed.changes = changes;
  exp.expect("listen: list_changed delivered", changes.length === 1, changes);
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

  // Tools that ask: one question per round, answered through the request handlers.
  const hello = await within(client.callTool({ name: "ask_name", arguments: {} }), 20, "ask_name");
  exp.equal("elicitation round trip", hello.content, [{ type: "text", text: "hello Ada" }]);
  const all = await within(
    client.callTool({ name: "ask_all", arguments: { runs: path.join(tmp, "ts-runs") } }),
    20,
    "ask_all",
  );
  exp.equal("elicitation, sampling and roots over three rounds", all.content, [{ type: "text", text: "Ada / Paris / file:///w" }]);
  exp.equal("questions in order", asked.map((a) => a.method), [
    "elicitation/create", "elicitation/create", "sampling/createMessage", "roots/list",
  ]);
  const inputRequired = received.filter((m) => m.result?.resultType === "input_required");
  exp.equal("input-required results on the wire", inputRequired.length, 4);
  exp.expect("no request from the host on the wire", !received.some((m) => m.method && m.id !== undefined), received);

  exp.equal("client reported no errors", clientErrors, []);
  exp.expect("no initialize on the wire", !sent.some((m) => m.method === "initialize"), sent.map((m) => m.method));
  exp.expect(
    "every request carries the 2026-07-28 envelope",
    sent.filter((m) => m.id !== undefined && m.method).every((m) => m.params?._meta?.[PROTOCOL_VERSION_META_KEY] === "2026-07-28"),
    sent,
  );

  const child = transport._process;
  const exited = new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  await client.close();
  observed.exit = await within(exited, 10, "host exit");
  exp.equal("host exit code after stdin closed", observed.exit, { code: 0, signal: null });
  observed.sentMethods = sent.map((m) => m.method ?? `response:${m.id}`);
  finish(exp, observed);
}

main().catch((err) => crash(err, observed));

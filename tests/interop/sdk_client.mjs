// The official MCP TypeScript SDK client (@modelcontextprotocol/sdk 1.x) driving the toolwire host
// over stdio (newline-delimited JSON), exactly as an MCP application would.
//
//   node sdk_client.mjs --tmp DIR -- PYTHON -m toolwire.host --no-builtins \
//       --tools examples/tools/echo_tools.py --tools tests/fixtures/interop_tools.py
//
// Exercises: initialize, tools/list, tools/call, progress, an isError result (invalid arguments),
// an unknown tool (McpError -32602), a client-side timeout (the SDK sends notifications/cancelled;
// the async tool must be interrupted and the host must stay responsive), a synchronous tool that
// times out on the client while its worker thread keeps blocking, logging/setLevel with
// notifications/message, ping, and closing stdin (the host must exit by itself).

import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  EmptyResultSchema,
  ErrorCode,
  LoggingMessageNotificationSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";

import { Expectations, crash, finish, parseArgv, readMarker, settle, waitFor, within } from "./common.mjs";

const observed = {};

async function main() {
  const { tmp, command, args } = parseArgv();
  const exp = new Expectations();

  const transport = new StdioClientTransport({
    command,
    args,
    env: { ...process.env },
    stderr: "inherit",
  });

  // Record what the client really sends (its own cancellation notifications included) ...
  const sent = [];
  const origSend = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return origSend(message, options);
  };

  const client = new Client({ name: "toolwire-interop-sdk", version: "1.0.0" }, { capabilities: {} });
  const clientErrors = [];
  client.onerror = (err) => clientErrors.push(String(err?.message ?? err));
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });

  const t0 = Date.now();
  await within(client.connect(transport), 20, "initialize");
  observed.connectMs = Date.now() - t0;
  observed.pid = transport.pid;

  // ... and every message it receives after the handshake.
  const received = [];
  const origOnMessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    received.push(message);
    origOnMessage?.(message, extra);
  };

  // initialize: what the SDK sent and what it made of the answer.
  const init = sent.find((m) => m.method === "initialize");
  observed.initializeRequest = init;
  observed.serverVersion = client.getServerVersion();
  observed.serverCapabilities = client.getServerCapabilities();
  observed.instructions = client.getInstructions();
  exp.expect("initialize sent first", sent[0]?.method === "initialize", sent[0]);
  exp.expect("initialized notification sent", sent.some((m) => m.method === "notifications/initialized"));
  exp.equal("serverInfo.name", observed.serverVersion?.name, "toolwire");
  exp.expect("serverInfo.version is a string", typeof observed.serverVersion?.version === "string");
  exp.expect("tools capability", observed.serverCapabilities?.tools !== undefined, observed.serverCapabilities);
  exp.expect("logging capability", observed.serverCapabilities?.logging !== undefined, observed.serverCapabilities);
  exp.expect("instructions is a string", typeof observed.instructions === "string");

  // tools/list
  const listed = await within(client.listTools(), 10, "tools/list");
  observed.toolNames = listed.tools.map((t) => t.name);
  exp.equal("tool names in registration order", observed.toolNames, ["echo", "count", "nap", "snooze", "steps", "chatty"]);
  const echoDef = listed.tools.find((t) => t.name === "echo");
  exp.equal("echo input schema", echoDef?.inputSchema, {
    type: "object",
    properties: { text: { description: "Text to send back.", type: "string" } },
    required: ["text"],
  });
  exp.equal("echo annotations", echoDef?.annotations, { readOnlyHint: true });
  exp.expect("no nextCursor", listed.nextCursor === undefined, listed.nextCursor);

  // tools/call, with text that is not ASCII.
  const text = "héllo ✓ \u2028 line";
  const echoed = await within(client.callTool({ name: "echo", arguments: { text } }), 10, "echo");
  observed.echo = echoed;
  exp.equal("echo result", echoed, { content: [{ type: "text", text }] });

  // progress: onprogress makes the SDK send a progress token. Two tools: `count` reports all its
  // progress at once, right before its response; `steps` pauses after each report.
  //
  // The SDK (1.x) dispatches notifications in a microtask but responses synchronously, so progress
  // notifications that reach it in the same read as the response are reported to onerror as
  // "unknown token" instead of reaching onprogress (typescript-sdk issue 2580). The host cannot
  // avoid this; so the wire order is checked on the raw messages, and for onprogress every value
  // must be accounted for: delivered in order, or reported late by that SDK race.
  const lateProgress = (token) =>
    clientErrors
      .filter((e) => e.startsWith("Received a progress notification for an unknown token: "))
      .map((e) => JSON.parse(e.slice(e.indexOf("{"))))
      .filter((n) => n.params.progressToken === token)
      .map((n) => n.params.progress);
  observed.progress = {};
  for (const [name, args, n] of [
    ["count", { n: 5 }, 5],
    ["steps", { n: 4, gap_ms: 50 }, 4],
  ]) {
    const delivered = [];
    const firstSeen = received.length;
    const res = await within(
      client.callTool({ name, arguments: args }, undefined, { onprogress: (p) => delivered.push(p) }),
      10,
      name,
    );
    const req = sent.find((m) => m.method === "tools/call" && m.params?.name === name);
    const token = req?.params?._meta?.progressToken;
    exp.expect(`${name}: progress token sent`, token !== undefined, req);
    // The raw stream: every progress notification for this token, in order, before the response.
    const stream = received.slice(firstSeen).filter(
      (m) => m.id === req?.id || (m.method === "notifications/progress" && m.params?.progressToken === token),
    );
    const wire = stream.map((m) => (m.method ? m.params.progress : "response"));
    const expected = Array.from({ length: n }, (_, i) => i + 1);
    exp.equal(`${name}: wire order`, wire, [...expected, "response"]);
    exp.expect(`${name}: total ${n} on every notification`, stream.slice(0, -1).every((m) => m.params.total === n), stream);
    const values = delivered.map((p) => p.progress);
    const late = lateProgress(token);
    observed.progress[name] = { result: res.content, delivered, late };
    exp.expect(`${name}: onprogress values strictly increasing`, values.every((v, i) => i === 0 || v > values[i - 1]), values);
    exp.equal(`${name}: every progress value delivered or reported late`, [...values, ...late].sort((a, b) => a - b), expected);
    if (name === "steps") {
      // Each report is followed by a pause, so at least the reports before the last reach onprogress.
      exp.expect("steps: onprogress received the reports before the last", values.length >= n - 1, delivered);
      exp.equal("steps: progress message", delivered[0]?.message, "step 1");
      exp.equal("steps result", res.content, [{ type: "text", text: "4 steps" }]);
    } else {
      exp.equal("count result", res.content, [{ type: "text", text: "counted to 5" }]);
    }
  }

  // An isError result: arguments that fail the input schema are a result the model can read.
  // (An object: a number would be coerced to its text, as protocol.md's coercion rules say.)
  const invalid = await within(client.callTool({ name: "echo", arguments: { text: { n: 42 } } }), 10, "invalid");
  observed.invalidArguments = invalid;
  exp.equal("invalid arguments: isError", invalid.isError, true);
  const invalidText = invalid.content?.[0]?.text ?? "";
  exp.expect("invalid arguments: names the tool", invalidText.startsWith('Invalid arguments for tool "echo"'), invalidText);
  exp.expect("invalid arguments: names the field", /\n {2}- text: /.test(invalidText), invalidText);
  exp.expect("invalid arguments: echoes what was received", invalidText.includes('{"text":{"n":42}}'), invalidText);

  // An unknown tool is a protocol error: McpError -32602.
  const unknown = await settle(within(client.callTool({ name: "no_such_tool", arguments: {} }), 10, "unknown"));
  observed.unknownTool = unknown;
  exp.equal("unknown tool: McpError", unknown.error?.name, McpError.name);
  exp.equal("unknown tool: code -32602", unknown.error?.code, ErrorCode.InvalidParams);
  exp.expect("unknown tool: message names it", unknown.error?.message?.includes("no_such_tool"), unknown.error);

  // A request timeout: the SDK rejects with -32001 and sends notifications/cancelled.
  const marker = path.join(tmp, "nap-marker.txt");
  const napStart = Date.now();
  const timedOut = await settle(
    within(client.callTool({ name: "nap", arguments: { seconds: 30, marker } }, undefined, { timeout: 1000 }), 10, "nap"),
  );
  observed.timeout = { ...timedOut, elapsedMs: Date.now() - napStart };
  exp.equal("timeout: code -32001", timedOut.error?.code, ErrorCode.RequestTimeout);
  const napReq = sent.find((m) => m.method === "tools/call" && m.params?.name === "nap");
  const cancel = sent.find((m) => m.method === "notifications/cancelled");
  observed.cancelNotification = cancel;
  exp.expect("timeout: notifications/cancelled sent", cancel !== undefined);
  exp.equal("timeout: cancel names the request id", cancel?.params?.requestId, napReq?.id);
  const napOutcome = await waitFor(() => {
    const m = readMarker(marker);
    return m === "cancelled" || m === "finished" ? m : null;
  }, 5);
  observed.napMarker = readMarker(marker);
  exp.expect("timeout: the tool had started (else the machine is too slow for a 1 s timeout)", observed.napMarker !== null);
  exp.equal("timeout: the tool was interrupted", napOutcome, "cancelled");

  // The host stays responsive after the cancellation ...
  const pingStart = Date.now();
  const pong = await settle(within(client.ping(), 5, "ping"));
  observed.ping = { ...pong, ms: Date.now() - pingStart };
  exp.expect("ping answered", pong.error === undefined && typeof pong.value === "object", pong);
  const after = await within(client.callTool({ name: "echo", arguments: { text: "still here" } }), 5, "echo after cancel");
  exp.equal("echo after cancel", after.content, [{ type: "text", text: "still here" }]);
  // ... and sends nothing for the cancelled request (MCP: no response after notifications/cancelled).
  const late = received.filter((m) => m.id !== undefined && m.id === napReq?.id);
  exp.equal("nothing sent for the cancelled request", late, []);

  // A synchronous tool that blocks its worker thread past the client's timeout: the host keeps
  // answering while the thread is still asleep.
  const blocked = await settle(
    within(client.callTool({ name: "snooze", arguments: { ms: 2500 } }, undefined, { timeout: 300 }), 10, "snooze"),
  );
  exp.equal("sync timeout: code -32001", blocked.error?.code, ErrorCode.RequestTimeout);
  const duringStart = Date.now();
  const during = await within(client.callTool({ name: "echo", arguments: { text: "meanwhile" } }), 5, "echo during snooze");
  observed.echoWhileSyncToolBlocksMs = Date.now() - duringStart;
  exp.equal("echo while a sync tool blocks", during.content, [{ type: "text", text: "meanwhile" }]);
  exp.expect("echo while blocked is quick", observed.echoWhileSyncToolBlocksMs < 1000, observed.echoWhileSyncToolBlocksMs);

  // logging/setLevel: debug lets all three entries through; warning only the last.
  await within(client.setLoggingLevel("debug"), 5, "setLevel debug");
  await within(client.callTool({ name: "chatty", arguments: { tag: "one" } }), 5, "chatty one");
  await waitFor(() => logs.filter((l) => l.data?.tag === "one").length >= 3, 5);
  await within(client.setLoggingLevel("warning"), 5, "setLevel warning");
  await within(client.callTool({ name: "chatty", arguments: { tag: "two" } }), 5, "chatty two");
  // Entries are written in order, so once the warning of "two" is here, any lower ones would be too.
  await waitFor(() => logs.some((l) => l.data?.tag === "two" && l.level === "warning"), 5);
  observed.logs = logs;
  exp.equal(
    "log levels at debug",
    logs.filter((l) => l.data?.tag === "one").map((l) => l.level),
    ["debug", "info", "warning"],
  );
  exp.equal(
    "log levels at warning",
    logs.filter((l) => l.data?.tag === "two").map((l) => l.level),
    ["warning"],
  );
  exp.equal("log entry logger is the tool name", logs[0]?.logger, "chatty");
  const badLevel = await settle(
    within(client.request({ method: "logging/setLevel", params: { level: "loud" } }, EmptyResultSchema), 5, "bad level"),
  );
  exp.equal("invalid log level: -32602", badLevel.error?.code, ErrorCode.InvalidParams);

  const otherErrors = clientErrors.filter((e) => !e.startsWith("Received a progress notification for an unknown token: "));
  exp.equal("client reported no other errors", otherErrors, []);
  observed.clientErrors = clientErrors;

  // Closing: the SDK closes stdin; the host must exit by itself (before the SDK's 2 s SIGTERM).
  const child = transport._process;
  const exited = new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once("exit", (code, signal) => resolve({ code, signal }));
  });
  const closeStart = Date.now();
  await client.close();
  observed.exit = await within(exited, 10, "host exit");
  observed.closeMs = Date.now() - closeStart;
  exp.equal("host exit code after stdin closed", observed.exit, { code: 0, signal: null });
  // The SDK sends SIGTERM 2 s after closing stdin; the host must have exited by itself before that.
  exp.expect("host exited by itself after stdin closed (before the SDK's SIGTERM)", observed.closeMs < 2000, observed.closeMs);

  observed.sentMethods = sent.map((m) => m.method ?? `response:${m.id}`);
  finish(exp, observed);
}

main().catch((err) => crash(err, observed));

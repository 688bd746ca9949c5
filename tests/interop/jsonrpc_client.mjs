// vscode-jsonrpc (the JSON-RPC library under VS Code's language clients) driving the toolwire host
// over LSP Content-Length framing, as a language-server client would.
//
//   node jsonrpc_client.mjs --tmp DIR -- PYTHON -m toolwire.host --no-builtins \
//       --tools examples/tools/echo_tools.py --tools tests/fixtures/interop_tools.py
//
// Exercises: framing detection (the host answers in Content-Length framing), an LSP-style
// initialize + initialized, tools/list, tools/call (concurrent ones, and a large non-ASCII payload, so the
// byte count matters), progress with a string token, -32601 and -32602 errors, `$/cancelRequest`
// through a CancellationToken (the host answers -32800 and interrupts the tool), then the LSP
// shutdown / exit sequence (exit code 0).

import { spawn } from "node:child_process";
import path from "node:path";

import rpc from "vscode-jsonrpc/node.js";

import { Expectations, crash, finish, parseArgv, readMarker, settle, waitFor, within } from "./common.mjs";

const { CancellationTokenSource, ErrorCodes, ResponseError, StreamMessageReader, StreamMessageWriter, createMessageConnection } = rpc;

const observed = {};

async function main() {
  const { tmp, command, args } = parseArgv();
  const exp = new Expectations();

  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], env: process.env });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  let head = Buffer.alloc(0);
  child.stdout.on("data", (chunk) => {
    if (head.length < 64) head = Buffer.concat([head, chunk]).subarray(0, 64);
  });

  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  const connectionErrors = [];
  connection.onError(([err]) => connectionErrors.push(String(err?.message ?? err)));
  const progress = [];
  const order = []; // progress values and "response", in the order the client saw them
  connection.onNotification("notifications/progress", (params) => {
    progress.push(params);
    order.push(params.progress);
  });
  const unhandled = [];
  connection.onUnhandledNotification((n) => unhandled.push(n.method));
  connection.listen();

  // initialize, with the params an LSP client sends.
  const init = await within(
    connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: null,
      capabilities: {},
      clientInfo: { name: "toolwire-interop-vscode-jsonrpc", version: "1.0.0" },
      protocolVersion: "2025-06-18",
    }),
    20,
    "initialize",
  );
  observed.initialize = init;
  observed.firstBytes = head.toString("latin1");
  exp.expect("host answers in Content-Length framing", /^Content-Length: \d+\r\n\r\n\{/.test(observed.firstBytes), observed.firstBytes);
  exp.equal("protocolVersion echoed", init?.protocolVersion, "2025-06-18");
  exp.equal("capabilities", init?.capabilities, { tools: { listChanged: true }, logging: {} });
  exp.equal("serverInfo.name", init?.serverInfo?.name, "toolwire");
  await connection.sendNotification("initialized", {});

  // tools/list
  const listed = await within(connection.sendRequest("tools/list", {}), 10, "tools/list");
  observed.toolNames = listed.tools.map((t) => t.name);
  exp.equal("tool names", observed.toolNames, ["echo", "count", "nap", "snooze", "steps", "chatty"]);
  exp.expect("every tool has a description and an object input schema",
    listed.tools.every((t) => typeof t.description === "string" && t.inputSchema?.type === "object"), listed.tools);

  // tools/call, small and large; the large text is multi-byte UTF-8, so bytes != characters.
  const small = await within(connection.sendRequest("tools/call", { name: "echo", arguments: { text: "héllo ✓" } }), 10, "echo");
  exp.equal("echo result", small, { content: [{ type: "text", text: "héllo ✓" }] });
  const big = "é✓\u2028😀".repeat(50_000);
  const bigRes = await within(connection.sendRequest("tools/call", { name: "echo", arguments: { text: big } }), 20, "big echo");
  observed.bigEchoBytes = Buffer.byteLength(big, "utf8");
  exp.expect("large multi-byte echo comes back intact", bigRes?.content?.[0]?.text === big, bigRes?.content?.[0]?.text?.length);

  // Progress with a string token: notifications arrive before the response, in order.
  const counted = await within(
    connection.sendRequest("tools/call", { name: "count", arguments: { n: 3 }, _meta: { progressToken: "tok-1" } }),
    10,
    "count",
  );
  order.push("response");
  observed.progress = progress;
  exp.equal("count result", counted?.content, [{ type: "text", text: "counted to 3" }]);
  exp.equal("progress then response", order, [1, 2, 3, "response"]);
  exp.expect("progress carries the string token", progress.length === 3 && progress.every((p) => p.progressToken === "tok-1"), progress);

  // Requests run concurrently: an echo sent after a slow call is answered first.
  const finished = [];
  await within(
    Promise.all([
      connection
        .sendRequest("tools/call", { name: "steps", arguments: { n: 2, gap_ms: 150 } })
        .then(() => finished.push("steps")),
      connection.sendRequest("tools/call", { name: "echo", arguments: { text: "quick" } }).then(() => finished.push("echo")),
    ]),
    10,
    "concurrent calls",
  );
  observed.completionOrder = finished;
  exp.equal("a quick call overtakes a slow one", finished, ["echo", "steps"]);

  // Protocol errors arrive as ResponseError with the code.
  const unknownMethod = await settle(within(connection.sendRequest("no/such/method", {}), 5, "unknown method"));
  exp.equal("unknown method: -32601", unknownMethod.error?.code, ErrorCodes.MethodNotFound);
  const unknownTool = await settle(within(connection.sendRequest("tools/call", { name: "nope", arguments: {} }), 5, "unknown tool"));
  exp.equal("unknown tool: -32602", unknownTool.error?.code, ErrorCodes.InvalidParams);
  exp.equal("unknown tool: data", unknownTool.error?.data, { name: "nope" });
  observed.errors = { unknownMethod, unknownTool };

  // $/cancelRequest via a CancellationToken, once the tool is running.
  const marker = path.join(tmp, "lsp-nap-marker.txt");
  const source = new CancellationTokenSource();
  const napStart = Date.now();
  const napPromise = settle(
    within(connection.sendRequest("tools/call", { name: "nap", arguments: { seconds: 30, marker } }, source.token), 10, "nap"),
  );
  const started = await waitFor(() => readMarker(marker) !== null, 10);
  exp.expect("nap started", started, readMarker(marker));
  source.cancel();
  const nap = await napPromise;
  observed.cancel = { ...nap, elapsedMs: Date.now() - napStart };
  exp.expect("cancel: rejected with a ResponseError", nap.error?.name === ResponseError.name, nap);
  // -32800 is LSP's RequestCancelled (vscode-languageserver-protocol's LSPErrorCodes, not in ErrorCodes).
  exp.equal("cancel: code -32800", nap.error?.code, -32800);
  const outcome = await waitFor(() => {
    const m = readMarker(marker);
    return m === "cancelled" || m === "finished" ? m : null;
  }, 5);
  exp.equal("cancel: the tool was interrupted", outcome, "cancelled");
  const after = await within(connection.sendRequest("ping"), 5, "ping after cancel");
  exp.equal("ping after cancel", after, {});

  // LSP shutdown / exit.
  const shut = await within(connection.sendRequest("shutdown"), 5, "shutdown");
  exp.equal("shutdown result", shut, null);
  const refused = await settle(within(connection.sendRequest("ping"), 5, "ping after shutdown"));
  exp.equal("request after shutdown: -32600", refused.error?.code, ErrorCodes.InvalidRequest);
  await connection.sendNotification("exit");
  observed.exit = await within(exited, 5, "host exit");
  exp.equal("exit code after shutdown + exit", observed.exit, { code: 0, signal: null });

  observed.connectionErrors = connectionErrors;
  observed.unhandledNotifications = unhandled;
  exp.equal("connection reported no errors", connectionErrors, []);
  connection.dispose();
  finish(exp, observed);
}

main().catch((err) => crash(err, observed));

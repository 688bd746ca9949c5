// Helpers shared by the interop scripts: argument parsing, expectations, waiting, the summary.
//
// Every script is run as
//     node SCRIPT.mjs --tmp DIR -- HOST_COMMAND [HOST_ARGS...]
// where HOST_COMMAND is the interpreter (the venv's python) and HOST_ARGS start the toolwire host,
// for example `-m toolwire.host --no-builtins --tools examples/tools/echo_tools.py ...`.
// It prints one JSON object (the summary) on stdout and exits 1 when any expectation failed.

import fs from "node:fs";

/** Parse `--tmp DIR -- COMMAND ARGS...` from process.argv. */
export function parseArgv(argv = process.argv.slice(2)) {
  const sep = argv.indexOf("--");
  if (sep < 0 || sep === argv.length - 1) {
    throw new Error("usage: node SCRIPT.mjs --tmp DIR -- COMMAND [ARGS...]");
  }
  const opts = {};
  const before = argv.slice(0, sep);
  for (let i = 0; i < before.length; i += 2) {
    if (!before[i].startsWith("--") || i + 1 >= before.length) {
      throw new Error(`bad option near ${JSON.stringify(before[i])}`);
    }
    opts[before[i].slice(2)] = before[i + 1];
  }
  if (!opts.tmp) throw new Error("--tmp DIR is required");
  return { tmp: opts.tmp, command: argv[sep + 1], args: argv.slice(sep + 2) };
}

/** Collects named expectations; `summary.failures` lists the ones that did not hold. */
export class Expectations {
  constructor() {
    this.checks = [];
    this.failures = [];
  }

  /** Record that `ok` should be true; `detail` is any JSON value explaining what was seen. */
  expect(name, ok, detail = undefined) {
    this.checks.push(name);
    if (!ok) this.failures.push({ name, detail });
    return ok;
  }

  /** Expect `actual` to deep-equal `expected` (compared as JSON). */
  equal(name, actual, expected) {
    const same = JSON.stringify(actual) === JSON.stringify(expected);
    return this.expect(name, same, same ? undefined : { actual, expected });
  }
}

/** Run `fn` until it returns a truthy value or `seconds` pass; returns the last value. */
export async function waitFor(fn, seconds, stepMs = 20) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await fn();
    if (value || Date.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/** The marker file's text, or null while it does not exist. */
export function readMarker(path) {
  try {
    return fs.readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** How many times longer than its nominal limit `within` waits: the limits only catch a
 * host that never answers, and a loaded machine (load 10 and more on 2 cores) stretches a
 * normal answer well past a few seconds. */
const PATIENCE = Number(process.env.TOOLWIRE_INTEROP_PATIENCE ?? 6);

/** Reject with a labelled error when `promise` takes longer than `seconds` × PATIENCE. */
export function within(promise, seconds, label) {
  seconds *= PATIENCE;
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label}: no answer within ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** Await `promise` and return {value} or {error: {name, code, message, data}}. */
export async function settle(promise) {
  try {
    return { value: await promise };
  } catch (err) {
    return {
      error: {
        name: err?.constructor?.name ?? typeof err,
        code: err?.code,
        message: String(err?.message ?? err),
        data: err?.data,
      },
    };
  }
}

/** Print the summary as JSON on stdout and exit: 0 when every expectation held, else 1. */
export function finish(exp, observed) {
  const summary = { ok: exp.failures.length === 0, checks: exp.checks, failures: exp.failures, observed };
  process.stdout.write(JSON.stringify(summary, null, 2) + "\n", () => {
    process.exit(summary.ok ? 0 : 1);
  });
}

/** Print a crash (an exception outside any expectation) as a failed summary and exit 1. */
export function crash(err, observed = {}) {
  const summary = {
    ok: false,
    checks: [],
    failures: [{ name: "script crashed", detail: String(err?.stack ?? err) }],
    observed,
  };
  process.stdout.write(JSON.stringify(summary, null, 2) + "\n", () => process.exit(1));
}

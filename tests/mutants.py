"""``make mutants``: planted one-line regressions, each of which must turn its tests red.

Each mutant of :data:`MUTANTS` replaces one line of security- or data-critical product
code (the seccomp rules, path confinement, requestState verification, ...). The tree
is copied once (``git ls-files``: tracked and untracked-but-not-ignored files) to a
work directory laid out as the installed package (``toolwire/``, ``toolwire/host``,
``toolwire/client``) beside a copy of the tests, with a virtual environment holding a
copy of this checkout's dependencies whose interpreter imports the copy. Then:

1. the named tests of every mutant run (in one pytest run) on the unmutated copy and
   must pass (a red baseline would make every mutant look caught);
2. each mutant is applied alone (its ``old`` text must occur exactly once in its
   file), its tests run, the file is restored; the mutant is *caught* when they fail.

Exit status 0 when every mutant was caught; 1 when one survived or a baseline failed
(each is listed). ``--only NAME`` (repeatable) runs only those; ``--list`` prints
them. A new mutant: one entry below, naming the narrowest tests that must notice it.
tests/README.md says more.

Run as ``make mutants`` (or ``.venv/bin/python tests/mutants.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"toolwire": "toolwire", "host": "toolwire/host", "client": "toolwire/client"}
"""Top-level directories of the checkout and where the installed package has them
(pyproject.toml's [tool.setuptools.package-dir])."""


@dataclass(frozen=True)
class Mutant:
    """One planted regression.

    Attributes:
        name: a short unique name.
        path: the file, relative to the checkout (e.g. ``host/sandbox/linux/seccomp.py``).
        old: text occurring exactly once in that file.
        new: what replaces it (one line's change).
        tests: pytest node ids (relative to the checkout) that must fail.
    """

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


SECCOMP_TESTS = ("tests/host/sandbox/test_sandbox_seccomp_rules.py",)
PATH_DEPTH_TEST = "tests/host/builtins/test_builtin_paths.py::test_a_path_of_256_components_is_accepted_and_257_refused"
MODERN_APPROVAL_TEST = (
    "tests/host/methods/test_modern_inputs.py::test_modern_approval_through_elicitation"
)
LIST_QUEUE_TEST = "tests/host/calls/test_pipeline_e2e.py::test_paths_given_as_a_list_are_queued_too"
EDIT_OVERLAP_TEST = "tests/host/builtins/test_builtin_edit.py::test_overlapping_occurrences_are_taken_leftmost_and_apart"
COMMIT_TESTS = "tests/host/calls/test_commit_order_e2e.py"
SECRETS_TESTS = "tests/host/sandbox/test_sandbox_secrets.py"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "secrets: a placeholder is substituted for any host",
        "host/sandbox/egress/credentials.py",
        "if not s.allowed(host, port):",
        "if False:",
        (f"{SECRETS_TESTS}::test_refusals_are_answered_and_logged",),
    ),
    Mutant(
        "secrets: a tunnel's Host header may name another host",
        "host/sandbox/egress/proxy.py",
        'if any(v.decode("ascii", "replace").lower() not in names for v in given):',
        "if False:",
        (f"{SECRETS_TESTS}::test_exfiltration_attempts_all_fail",),
    ),
    Mutant(
        "secrets: an upstream's echo of a real value is not masked",
        "host/sandbox/egress/credentials.py",
        'buf = buf.replace(v, b"*" * len(v))',
        "buf = buf.replace(v, v)",
        (f"{SECRETS_TESTS}::test_a_response_echoing_the_value_is_masked",),
    ),
    Mutant(
        "secrets: a request body is not checked for placeholders",
        "host/sandbox/egress/credentials.py",
        "if PLACEHOLDER_PREFIX.encode() in buf:",
        "if False:",
        (f"{SECRETS_TESTS}::test_a_placeholder_in_a_request_body_goes_to_its_own_hosts_only",),
    ),
    Mutant(
        "secrets: a Basic credential is not decoded",
        "host/sandbox/egress/credentials.py",
        'if name.lower() == b"authorization" and (parts := basic_parts(value)) is not None:',
        "if False and (parts := basic_parts(value)) is not None:",
        (f"{SECRETS_TESTS}::test_basic_credentials_are_decoded_to_be_checked_and_replaced",),
    ),
    Mutant(
        "secrets: a placeholder in a host name is not refused",
        "host/sandbox/egress/proxy.py",
        'policy.secrets.refuse_any(host.lower(), "is never sent in a host name")',
        "pass",
        (f"{SECRETS_TESTS}::test_exfiltration_attempts_all_fail",),
    ),
    Mutant(
        "secrets: a tool's result is not redacted",
        "host/calls/executor.py",
        "here).\n        return redact(await self._invoke(tool, kwargs, ctx))",
        "here).\n        return await self._invoke(tool, kwargs, ctx)",
        (f"{SECRETS_TESTS}::test_results_and_progress_of_a_tool_are_redacted",),
    ),
    Mutant(
        "seccomp: a call through another architecture is allowed",
        "host/sandbox/linux/seccomp.py",
        'emit(_JEQ_K, _AUDIT_ARCH[machine], None, "kill")',
        "emit(_JEQ_K, _AUDIT_ARCH[machine], None, None)",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: the x32 ABI is allowed",
        "host/sandbox/linux/seccomp.py",
        'emit(_JGE_K, _X32_SYSCALL_BIT, "kill", None)',
        "emit(_JGE_K, _X32_SYSCALL_BIT, None, None)",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: clone3 is allowed",
        "host/sandbox/linux/seccomp.py",
        'emit(_JEQ_K, _number("clone3", machine) or 0, "enosys", None)',
        'emit(_JEQ_K, _number("clone3", machine) or 0, "allow", None)',
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: clone with namespace flags is allowed",
        "host/sandbox/linux/seccomp.py",
        'emit(_JSET_K, _CLONE_NAMESPACES, "eperm", "allow")',
        'emit(_JSET_K, _CLONE_NAMESPACES, "allow", "allow")',
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: CLONE_NEWIPC is not a namespace flag",
        "host/sandbox/linux/seccomp.py",
        "    | 0x08000000  # CLONE_NEWIPC",
        "    | 0  # CLONE_NEWIPC",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: TIOCSTI is allowed",
        "host/sandbox/linux/seccomp.py",
        'emit(_JEQ_K, _TIOCSTI, "eperm", None)',
        "emit(_JEQ_K, _TIOCSTI, None, None)",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: any netlink protocol is allowed",
        "host/sandbox/linux/seccomp.py",
        'emit(_JEQ_K, _NETLINK_ROUTE, "allow", "eprotonosupport")',
        'emit(_JEQ_K, _NETLINK_ROUTE, "allow", "allow")',
        SECCOMP_TESTS,
    ),
    Mutant(
        "requestState: expiry is ignored",
        "host/tools/rounds.py",
        'if type(payload.get("exp")) is not int or payload["exp"] < time.time():',
        'if type(payload.get("exp")) is not int:',
        ("tests/host/tools/test_rounds_state.py",),
    ),
    Mutant(
        "requestState: lives 1,000 times longer",
        "host/tools/rounds.py",
        "body = dict(payload, exp=int(time.time() + self.lifetime))",
        "body = dict(payload, exp=int(time.time() + self.lifetime * 1000))",
        ("tests/host/tools/test_rounds_state.py",),
    ),
    Mutant(
        "commands: a timeout fires at four times its limit",
        "host/sandbox/commands.py",
        "with anyio.move_on_after(timeout) as scope:",
        "with anyio.move_on_after(timeout * 4) as scope:",
        ("tests/host/sandbox/test_commands.py::test_the_timeout_fires_at_its_limit_not_later",),
    ),
    Mutant(
        "sandbox: no IPC namespace",
        "host/sandbox/bubblewrap.py",
        '            "--unshare-ipc",\n',
        '            "--die-with-parent",\n',
        ("tests/host/sandbox/test_sandbox_namespaces.py",),
    ),
    Mutant(
        "sandbox: no UTS namespace",
        "host/sandbox/bubblewrap.py",
        '            "--unshare-uts",\n',
        '            "--die-with-parent",\n',
        ("tests/host/sandbox/test_sandbox_namespaces.py",),
    ),
    Mutant(
        "paths: a sibling of the root with the root's name as prefix is inside",
        "host/sandbox/paths.py",
        'return p == r or p.startswith(r.rstrip("/") + "/")',
        "return p == r or p.startswith(r)",
        (
            "tests/host/builtins/test_builtin_paths.py::test_a_sibling_whose_name_starts_with_the_roots_is_outside",
        ),
    ),
    Mutant(
        "paths: a resolved path outside the root is accepted",
        "host/sandbox/paths.py",
        "    if not is_inside(real, root):\n        raise _outside(path)\n    rel =",
        "    if False:\n        raise _outside(path)\n    rel =",
        ("tests/host/builtins/test_builtin_paths.py::test_escapes_refused",),
    ),
    Mutant(
        "paths: 300 components are allowed",
        "host/sandbox/paths.py",
        "MAX_PATH_COMPONENTS = 256\n",
        "MAX_PATH_COMPONENTS = 300\n",
        (PATH_DEPTH_TEST,),
    ),
    Mutant(
        "paths: a path argument of 256 components is refused",
        "host/sandbox/paths.py",
        'if path.count("/") + 1 > MAX_PATH_COMPONENTS:',
        'if path.count("/") + 1 >= MAX_PATH_COMPONENTS:',
        (PATH_DEPTH_TEST,),
    ),
    Mutant(
        "paths: a file 256 levels below the root is refused",
        "host/sandbox/paths.py",
        'if rel.count("/") > MAX_PATH_COMPONENTS:',
        'if rel.count("/") >= MAX_PATH_COMPONENTS:',
        (PATH_DEPTH_TEST,),
    ),
    Mutant(
        "outputs: read and grep open any host's full-output files",
        "host/sandbox/outputs.py",
        "    if os.path.dirname(real) != d:",
        "    if not os.path.dirname(real).startswith(os.path.dirname(d)):",
        (
            "tests/escape/test_sandbox_escape_outputs.py"
            "::test_the_file_tools_refuse_another_hosts_full_output_files",
        ),
    ),
    Mutant(
        "mounts: commands run unsandboxed though the sandbox is active",
        "host/sandbox/bubblewrap.py",
        "        if not sandboxed or self.bwrap is None:\n            return WrappedCommand(",
        "        if True:\n            return WrappedCommand(",
        ("tests/escape/test_sandbox_escape_tmpfs.py",),
    ),
    Mutant(
        "mounts: the host's /tmp instead of a private tmpfs",
        "host/sandbox/bubblewrap.py",
        '("--proc", "", "/proc"), ("--tmpfs", "", "/tmp")]',
        '("--proc", "", "/proc"), ("--bind", "/tmp", "/tmp")]',
        ("tests/escape/test_sandbox_escape.py::test_private_tmp_is_emptied_between_commands",),
    ),
    Mutant(
        "mounts: /dev stays writable",
        "host/sandbox/bubblewrap.py",
        'return [*sorted(ops, key=lambda op: _depth(op[2])), ("--remount-ro", "", "/dev")]',
        "return sorted(ops, key=lambda op: _depth(op[2]))",
        (
            "tests/escape/test_sandbox_escape_tmpfs.py::test_dev_holds_no_files_but_its_devices_work",
        ),
    ),
    Mutant(
        "mounts: extra_ro_paths are bound writable",
        "host/sandbox/bubblewrap.py",
        'ops += [("--ro-bind", p, p) for p in self.settings.extra_ro_paths]',
        'ops += [("--bind", p, p) for p in self.settings.extra_ro_paths]',
        ("tests/host/sandbox/test_sandbox.py::test_extra_paths",),
    ),
    Mutant(
        "mounts: the full-output directory is bound writable",
        "host/sandbox/bubblewrap.py",
        'ops += [("--ro-bind", p, p) for p in outputs.sandbox_ro_paths()]',
        'ops += [("--bind", p, p) for p in outputs.sandbox_ro_paths()]',
        (
            "tests/escape/test_sandbox_escape_outputs.py"
            "::test_a_sandboxed_command_cannot_change_a_full_output_file",
        ),
    ),
    Mutant(
        "mounts: the host's inputs inside the root are writable",
        "host/sandbox/bubblewrap.py",
        '            ("--ro-bind", p, p)\n            for p in self.protected_paths',
        '            ("--bind", p, p)\n            for p in self.protected_paths',
        (
            "tests/escape/test_sandbox_escape_inputs.py"
            "::test_a_sandboxed_command_cannot_change_the_host_inputs",
        ),
    ),
    Mutant(
        "approval: a denied call runs",
        "host/calls/pipeline.py",
        "            if not decision.allowed:",
        "            if False:",
        ("tests/host/calls/test_pipeline_e2e.py::test_a_denied_approval_never_runs_the_tool",),
    ),
    Mutant(
        "approval: a declined or cancelled form allows the call",
        "host/calls/approval.py",
        'return ApprovalDecision(False, f"the user {done} the approval form")',
        'return ApprovalDecision(True, f"the user {done} the approval form")',
        (MODERN_APPROVAL_TEST,),
    ),
    Mutant(
        "approval: a tool a reload adds needs no approval",
        "host/calls/approval.py",
        "if self.names and self.known and tool.name not in self.known:",
        "if False:",
        (
            "tests/escape/test_sandbox_escape_inputs.py"
            "::test_approve_names_also_covers_tools_a_reload_adds",
        ),
    ),
    Mutant(
        "approval keys: the calls of a batch share one key",
        "host/tools/channel.py",
        'key = f"{APPROVAL_KEY}/{call_key(self._call_id)}" if round.batch else APPROVAL_KEY',
        "key = APPROVAL_KEY",
        (
            "tests/host/methods/test_modern_inputs.py::test_modern_batch_asks_once_per_call_in_source_order",
        ),
    ),
    Mutant(
        "approval keys: ids differing in type share a key",
        "host/tools/rounds.py",
        '    return _json.dumps(call_id).decode("utf-8")',
        "    return str(call_id)",
        (
            "tests/escape/test_sandbox_escape_approvals.py"
            "::test_batch_ids_differing_in_type_get_an_approval_each",
        ),
    ),
    Mutant(
        "approval: an answer to an approval the host never asked is taken",
        "host/tools/rounds.py",
        "elif key in self.responses and (not signed_only or key in self.asked_before):",
        "elif key in self.responses:",
        (MODERN_APPROVAL_TEST,),
    ),
    Mutant(
        "requestState: an altered state is accepted",
        "host/tools/rounds.py",
        "        if not any(hmac.compare_digest(_mac(key, raw), mac) for key in self._keys):",
        "        if False:",
        ("tests/host/methods/test_modern_inputs.py::test_tampered_or_foreign_state_is_an_error",),
    ),
    Mutant(
        "requestState: a state is taken for another request",
        "host/tools/rounds.py",
        '            if payload.get("d") != self.digest:',
        "            if False:",
        (MODERN_APPROVAL_TEST,),
    ),
    Mutant(
        "batch: a 2026-07-28 batch that asks runs its other calls in that round",
        "host/methods/batch.py",
        "    if asking:\n",
        "    if False:\n",
        (
            "tests/host/methods/test_modern_inputs.py"
            "::test_modern_batch_that_asks_runs_none_of_its_calls_until_the_answers",
        ),
    ),
    Mutant(
        "mutation queue: paths given as a list are not held",
        "host/calls/mutation.py",
        "values = value if isinstance(value, list) else [value]",
        "values = [value]",
        (LIST_QUEUE_TEST,),
    ),
    Mutant(
        "mutation queue: only the first of a call's paths is held",
        "host/calls/mutation.py",
        "for key in sorted(set(keys)):",
        "for key in sorted(set(keys))[:1]:",
        (LIST_QUEUE_TEST,),
    ),
    Mutant(
        "null: null for a nullable optional parameter becomes its default",
        "host/schema/__init__.py",
        "                and not self._sub_valid(declared, None)\n",
        "                and True\n",
        (
            "tests/host/tools/test_null_arguments_e2e.py"
            "::test_null_for_a_nullable_optional_parameter_stays_null",
        ),
    ),
    Mutant(
        "edit: overlapping occurrences are all taken",
        "host/builtins/edit.py",
        "pos = haystack.find(needle, pos + len(needle))",
        "pos = haystack.find(needle, pos + 1)",
        (EDIT_OVERLAP_TEST,),
    ),
    Mutant(
        "edit: the rightmost occurrence is taken first",
        "host/builtins/edit.py",
        "    pos = haystack.find(needle)\n",
        "    pos = haystack.rfind(needle)\n",
        (EDIT_OVERLAP_TEST,),
    ),
    Mutant(
        "workers: an 8 s pause before the restart after one crash",
        "host/workers/pool.py",
        "RESTART_BACKOFF = (0.0, 0.1,",
        "RESTART_BACKOFF = (8.0, 0.1,",
        (
            "tests/host/workers/test_workers_health.py"
            "::test_after_one_crash_the_next_call_is_served_without_a_pause",
        ),
    ),
    Mutant(
        "cancel/commit: a cancellation interrupts a committed call",
        "toolwire/inbound.py",
        "        self.cancelled_by = dialect\n        if self._committed:\n            return\n",
        "        self.cancelled_by = dialect\n",
        (COMMIT_TESTS,),
    ),
    Mutant(
        "cancel/commit: a committed call that was cancelled is not answered",
        "toolwire/session.py",
        "        if ctx._committed and reply is not None:",
        "        if False:",
        (COMMIT_TESTS,),
    ),
    Mutant(
        "cancel/commit: a cancelled call may still commit",
        "toolwire/inbound.py",
        "        if self.cancelled_by is not None or self._abort_error is not None:\n"
        "            return False\n        self._committed = True",
        "        if self._abort_error is not None:\n"
        "            return False\n        self._committed = True",
        (COMMIT_TESTS,),
    ),
    Mutant(
        "cancel/commit: a call past its timeout may still commit",
        "host/tools/context.py",
        "        if scope is not None and scope.cancel_called:",
        "        if False:",
        (COMMIT_TESTS,),
    ),
)


def _copy_tree(dest: Path) -> Path:
    """Copy the checkout's files to ``dest/tree`` and lay the package out in
    ``dest/pkgs``; returns the tree (where the tests run)."""
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    tree = dest / "tree"
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        src = REPO / rel
        if not src.is_file():
            continue
        top = rel.split("/", 1)[0]
        if top in PACKAGE_DIRS and "/" in rel:
            target = dest / "pkgs" / PACKAGE_DIRS[top] / rel.split("/", 1)[1]
        else:
            target = tree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return tree


def _make_venv(dest: Path) -> Path:
    """A virtual environment in ``dest/venv`` with a copy of this interpreter's
    dependencies (a sandboxed worker sees its interpreter's prefix, not this checkout's
    .venv) that imports ``toolwire`` from ``dest/pkgs``; returns its python."""
    venv = dest / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    # the host looks for ripgrep beside its interpreter
    for tool in ("rg",):
        found = Path(sys.executable).parent / tool
        if found.exists():
            shutil.copy2(found.resolve(), venv / "bin" / tool)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv)})["purelib"])
    here = Path(sysconfig.get_paths()["purelib"])
    for entry in here.iterdir():
        if entry.name.startswith(("__editable__", "toolwire-", "_toolwire", "__pycache__")):
            continue
        if entry.is_dir():
            shutil.copytree(entry, purelib / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, purelib / entry.name)
    (purelib / "_toolwire_mutants.pth").write_text(f"{dest / 'pkgs'}\n")
    probe = subprocess.run(
        [str(py), "-c", "import toolwire.host, pytest; print(toolwire.host.__file__)"],
        cwd=dest,
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or not probe.stdout.startswith(str(dest / "pkgs")):
        raise SystemExit(
            f"mutants: the copy's python does not import toolwire from the copy: "
            f"{probe.stdout.strip()} {probe.stderr.strip()[-2000:]}"
        )
    return py


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # No bytecode caches: a mutant and its restored original may share a size and a
    # second of mtime, which is all a .pyc is checked against.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _union(chosen: list[Mutant]) -> tuple[str, ...]:
    """Every test the ``chosen`` mutants name, once: a test of a file that is named
    whole is left out (the file runs it)."""
    named = {t for m in chosen for t in m.tests}
    return tuple(sorted(t for t in named if "::" not in t or t.split("::")[0] not in named))


def _run(
    py: Path, tree: Path, tests: tuple[str, ...], *, first_failure: bool = True
) -> tuple[bool, str]:
    """Run ``tests`` in the copy (stopping at the first failure unless told not to);
    (passed, the last lines of pytest's output)."""
    stop = ["-x"] if first_failure else []
    proc = subprocess.run(
        [str(py), "-m", "pytest", "-q", *stop, "-p", "no:cacheprovider", *tests],
        cwd=tree,
        env=_env(),
        capture_output=True,
        text=True,
    )
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-12:])
    return proc.returncode == 0, tail


def main(argv: list[str] | None = None) -> int:
    """Run the mutants; 0 when every one was caught."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--only", action="append", help="run the mutant of this name only (may be repeated)"
    )
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if args.only is None or m.name in args.only]
    if args.list:
        for m in MUTANTS:
            print(f"{m.name}  [{m.path}]  -> {' '.join(m.tests)}")
        return 0
    unknown = sorted(set(args.only or ()) - {m.name for m in MUTANTS})
    if unknown or not chosen:
        raise SystemExit(f"mutants: no mutant named {', '.join(unknown)!r} (see --list)")
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="toolwire-mutants.") as tmp:
        dest = Path(tmp)
        tree = _copy_tree(dest)
        py = _make_venv(dest)
        every = _union(chosen)
        ok, tail = _run(py, tree, every, first_failure=False)
        print(
            f"baseline ({len(every)} test files or tests): {'green' if ok else 'RED'}", flush=True
        )
        if not ok:
            failures.append(f"the baseline is red:\n{tail}")
        if failures:
            print("\n".join(failures))
            return 1
        for m in chosen:
            top, rest = m.path.split("/", 1)
            target = (
                dest / "pkgs" / PACKAGE_DIRS[top] / rest if top in PACKAGE_DIRS else tree / m.path
            )
            original = target.read_text()
            if original.count(m.old) != 1:
                failures.append(
                    f"{m.name}: its text occurs {original.count(m.old)} times in {m.path}"
                )
                continue
            target.write_text(original.replace(m.old, m.new))
            try:
                ok, tail = _run(py, tree, m.tests)
            finally:
                target.write_text(original)
            print(f"{'SURVIVED' if ok else 'caught  '}  {m.name}", flush=True)
            if ok:
                failures.append(f"{m.name}: {' '.join(m.tests)} stayed green")
    print(f"mutants: {len(chosen) - len(failures)} of {len(chosen)} caught")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

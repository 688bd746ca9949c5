#!/usr/bin/env bash
# Run the sandbox and escape tests a second time as an ordinary user.
#
# `make test` calls this after the main run. Hosts usually run as root (containers, CI),
# and the sandbox behaves differently for an ordinary user (a user namespace, the
# process rlimit instead of a pids cgroup), so both must hold. When the caller is root on
# Linux with setpriv(1), the files below run again as uid/gid 65534 (TOOLWIRE_TEST_UID
# and TOOLWIRE_TEST_GID choose others), with HOME and TMPDIR in a directory that user
# owns (so pytest's tmp_path works) and no capabilities. When the caller is not root,
# the main run already was the unprivileged one and nothing is repeated.
#
# The user must be able to read the checkout and run a Python with the test
# dependencies. Every parent directory of the checkout is checked: when one is not
# traversable, the checkout's files are copied to a directory the user can read. When
# the user cannot run .venv/bin/python (e.g. its interpreter lives under a 0700 /root),
# a second virtual environment is made from a Python the user can run, in
# build/unprivileged-venv (kept between runs) or in the work directory. Anything that
# stops the pass is an error with the reason, never a silent skip.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd -P)
# Arguments, when given, replace the files (e.g. one test file while working on it).
if [ $# -gt 0 ]; then FILES=("$@"); else FILES=(tests/escape/test_*.py tests/host/sandbox/test_sandbox*.py tests/host/sandbox/test_commands.py tests/host/workers/test_sandbox_worker_template.py); fi
TEST_UID=${TOOLWIRE_TEST_UID:-65534}
TEST_GID=${TOOLWIRE_TEST_GID:-65534}

say() { echo "[unprivileged pass] $*" >&2; }

if [ "$(uname -s)" != Linux ]; then
  say "not Linux: the sandbox tests have no unprivileged variant here"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  say "running as uid $(id -u) already: the main run was the unprivileged pass"
  exit 0
fi
if ! command -v setpriv >/dev/null 2>&1; then
  say "ERROR: running as root but setpriv (util-linux) is missing: cannot run the pass as an ordinary user"
  exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/toolwire-unprivileged.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT
chmod 0755 "$WORK"
mkdir -p "$WORK/home" "$WORK/tmp"
chown "$TEST_UID:$TEST_GID" "$WORK/home" "$WORK/tmp"

as_user() {
  setpriv --reuid="$TEST_UID" --regid="$TEST_GID" --clear-groups --inh-caps=-all \
    env -i PATH="/usr/local/bin:/usr/bin:/bin" HOME="$WORK/home" TMPDIR="$WORK/tmp" \
    LANG=C.UTF-8 CI="${CI:-}" TOOLWIRE_SANDBOX_OPTIONAL="${TOOLWIRE_SANDBOX_OPTIONAL:-}" \
    TOOLWIRE_WORKER_START="${TOOLWIRE_WORKER_START:-}" "$@"
}

# 1. The checkout: every parent must be traversable and the files readable.
SRC=$REPO
blocked=""
dir=$REPO
while :; do
  if ! as_user test -x "$dir"; then blocked=$dir; fi
  [ "$dir" = / ] && break
  dir=$(dirname "$dir")
done
if [ -n "$blocked" ] || ! as_user test -r "$REPO/pyproject.toml"; then
  say "uid $TEST_UID cannot read the checkout (${blocked:-$REPO} is not accessible): copying it to $WORK/src"
  mkdir "$WORK/src"
  git -C "$REPO" ls-files -z --cached --others --exclude-standard \
    | (cd "$REPO" && tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
  chmod -R a+rX "$WORK/src"
  SRC=$WORK/src
fi

# 2. A Python the user can run, with the project and its test dependencies.
can_run() { (cd "$SRC" && as_user "$1" -c 'import pytest, xdist, toolwire.host, tests.hostproc') >/dev/null 2>&1; }
PY=$REPO/.venv/bin/python
if ! can_run "$PY"; then
  if [ "$SRC" = "$REPO" ]; then VENV=$REPO/build/unprivileged-venv; else VENV=$WORK/venv; fi
  PY=$VENV/bin/python
  if [ "$VENV" = "$WORK/venv" ] || [ ! -f "$VENV/.stamp" ] || [ "$REPO/pyproject.toml" -nt "$VENV/.stamp" ] \
      || ! can_run "$PY"; then
    base=""
    for cand in "$(command -v python3 || true)" /usr/bin/python3 /usr/local/bin/python3; do
      [ -n "$cand" ] || continue
      if as_user "$cand" -c 'import sys, venv; assert sys.version_info >= (3, 11)' >/dev/null 2>&1; then
        base=$cand
        break
      fi
    done
    if [ -z "$base" ]; then
      say "ERROR: uid $TEST_UID can run neither $REPO/.venv/bin/python nor any python3 >= 3.11 (checked: PATH, /usr/bin, /usr/local/bin)"
      exit 1
    fi
    say "uid $TEST_UID cannot run $REPO/.venv/bin/python: making $VENV from $base"
    rm -rf "$VENV"
    "$base" -m venv "$VENV"
    # Only what these files need (the package and pytest-xdist), not the whole test
    # extra: its SDKs cost a minute of installing on every fresh clone.
    "$VENV/bin/python" -m pip install --quiet --prefer-binary --disable-pip-version-check -e "$SRC[sandbox-tests]"
    touch "$VENV/.stamp"
    chmod -R a+rX "$VENV"
  fi
  if ! can_run "$PY"; then
    say "ERROR: uid $TEST_UID cannot import the project with $PY"
    exit 1
  fi
fi

# An outer process limit for the user (the kernel counts all of its processes): the
# fork-bomb attempts are bounded by themselves, and this bounds them again should the
# sandbox's own limit break. It stays above the 1024 processes a box may hold.
NPROC=${TOOLWIRE_TEST_NPROC:-4096}
# Two pytest-xdist workers, and no more: all of the user's processes count against that
# limit together (and against the limit a sandbox's user namespace inherits from the
# host that made it), so two attempts at once (the host-side control forks 1500, a boxed
# bomb holds up to 1024) stay well below it, where four might not.
WORKERS=${TOOLWIRE_UNPRIVILEGED_WORKERS:-2}
say "running ${FILES[*]} as uid $TEST_UID with $PY (at most $NPROC processes, $WORKERS workers)"
cd "$SRC"
as_user prlimit --nproc="$NPROC" -- "$PY" -m pytest -q -p no:cacheprovider -rs -n "$WORKERS" "${FILES[@]}"

# toolwire — every target creates .venv and installs into it when needed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PIP    := $(PY) -m pip install --quiet --prefer-binary --disable-pip-version-check

.PHONY: all demo test test-unprivileged test-escape-spawn test-under-load mutants lint bench soak paused venv clean typecheck-tree

all: test

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[test,lint]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/toolwire demo

# As root on Linux, the sandbox and escape tests run a second time as an ordinary user
# (tests/run_unprivileged.sh says why and how); as an ordinary user, once is enough.
# Both passes always run, at the same time: the main pass waits on the processes it
# starts for about half its time, and the ordinary-user pass fills those cores. The
# second pass's output goes to a file and is printed whole when both have ended, after
# the main pass's own summary, so each pass's summary stays readable; the target fails
# when either pass failed. TEST_SERIAL=1 runs them one after the other instead.
# TEST_WORKERS: pytest-xdist workers of the main pass, one more than the cores by default:
# many tests wait on processes they started. On this 2-core machine, with the passes side
# by side, 3 workers took 277 s, 4 took 272 s and 6 took 308 s (more CPU time spent on
# contention). tests/conftest.py starts the longest files first so none of them is left
# to run last. The ordinary-user pass uses two (tests/run_unprivileged.sh says why).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
TEST_SERIAL ?=
MAIN_PASS = $(PY) -m pytest -q -p no:cacheprovider --durations=15 -n $(TEST_WORKERS)
# Compiled modules are cached as Python does by default, also where the environment says
# not to (PYTHONDONTWRITEBYTECODE): the suite starts ~800 hosts and workers, and each one
# would compile every toolwire module again (a fifth of a host start's CPU time). The
# sources are compiled first, so the ordinary-user pass, which cannot write to this
# tree, finds them too.
test: $(STAMP)
	@unset PYTHONDONTWRITEBYTECODE; $(PY) -m compileall -q -j 0 toolwire host client tests; \
	first=0; second=0; start=$$(date +%s); \
	log=$$(mktemp "$${TMPDIR:-/tmp}/toolwire-ordinary-pass.XXXXXX"); \
	if [ -n "$(TEST_SERIAL)" ]; then \
	  $(MAIN_PASS) || first=$$?; \
	  tests/run_unprivileged.sh || second=$$?; \
	else \
	  tests/run_unprivileged.sh > "$$log" 2>&1 & pass2=$$!; \
	  trap 'kill $$pass2 2>/dev/null; rm -f "$$log"' INT TERM; \
	  $(MAIN_PASS) || first=$$?; \
	  mid=$$(date +%s); \
	  echo "make test: main pass exit $$first after $$((mid - start)) s; the ordinary-user pass (run beside it):"; \
	  wait $$pass2 || second=$$?; \
	  cat "$$log"; \
	fi; \
	rm -f "$$log"; end=$$(date +%s); \
	echo "make test: main pass exit $$first, ordinary-user pass exit $$second, both in $$((end - start)) s, load $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	[ $$first -eq 0 ] && [ $$second -eq 0 ]

# `make test` while a CPU hog keeps every core busy: the suite must not depend on the
# machine's speed. The hog (one busy loop per core, each bounded by `timeout`) is ended
# by its pids when the tests end, whatever their result.
HOG_SECONDS ?= 5400
test-under-load: $(STAMP)
	@token=toolwire-cpu-hog-$$$$-$$(date +%s); pids=""; \
	for i in $$(seq $$(nproc)); do \
	  timeout $(HOG_SECONDS) $(PYTHON) -c 'while True: pass' $$token & pids="$$pids $$!"; \
	done; \
	trap 'kill $$pids 2>/dev/null; wait $$pids 2>/dev/null' EXIT INT TERM; \
	echo "test-under-load: $$(nproc) busy loops ($$token, pids$$pids)"; \
	start=$$(date +%s); rc=0; $(MAKE) --no-print-directory test || rc=$$?; \
	echo "test-under-load: make test exit $$rc after $$(( $$(date +%s) - start )) s, load $$(cut -d' ' -f1-3 /proc/loadavg)"; \
	exit $$rc

test-unprivileged: $(STAMP)
	tests/run_unprivileged.sh

# The escape suite with workers started the other way (`spawn`: a bubblewrap per worker;
# the default is `fork`, a template per module and a sandbox per forked worker), as this
# user and, as root, as an ordinary user too. TOOLWIRE_WORKER_START is what the host reads
# when neither --worker-start nor [workers] start says.
test-escape-spawn: $(STAMP)
	@first=0; second=0; \
	TOOLWIRE_WORKER_START=spawn $(PY) -m pytest -q -p no:cacheprovider -n 2 tests/escape/test_sandbox_escape*.py || first=$$?; \
	TOOLWIRE_WORKER_START=spawn tests/run_unprivileged.sh tests/escape/test_sandbox_escape*.py || second=$$?; \
	[ $$first -eq 0 ] && [ $$second -eq 0 ]

# mypy cannot follow setuptools' editable finder, so it checks a tree of symlinks
# laid out like the installed package (toolwire/, toolwire/host, toolwire/client).
typecheck-tree:
	rm -rf build/typecheck && mkdir -p build/typecheck/toolwire
	for f in toolwire/*; do ln -s ../../../$$f build/typecheck/toolwire/; done
	ln -s ../../../host build/typecheck/toolwire/host
	ln -s ../../../client build/typecheck/toolwire/client

lint: $(STAMP) typecheck-tree
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	cd build/typecheck && ../../$(VENV)/bin/mypy --strict --config-file ../../pyproject.toml -p toolwire

# Planted one-line regressions in security- and data-critical code, applied one at a
# time to a copy of the tree: each must turn its named tests red (tests/mutants.py
# lists them and says how; `--list`, `--only NAME`; tests/README.md).
mutants: $(STAMP)
	$(PY) tests/mutants.py

bench: $(STAMP)
	$(PY) bench/run.py
	$(PY) bench/parallel.py
	$(PY) bench/http_load.py
	$(PY) bench/fleet.py
	$(PY) bench/egress.py

# The soak alone (make bench runs it after the timed benchmarks): bench/soak.py.
soak: $(STAMP)
	$(PY) bench/soak.py

# A client that reads nothing for 60 s while a tool floods (make bench runs it last).
paused: $(STAMP)
	$(PY) bench/paused.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache

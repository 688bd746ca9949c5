# toolwire — every target creates .venv and installs into it when needed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PIP    := $(PY) -m pip install --quiet --prefer-binary --disable-pip-version-check

.PHONY: all demo test test-unprivileged lint bench soak paused venv clean typecheck-tree

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
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n auto
	tests/run_unprivileged.sh

test-unprivileged: $(STAMP)
	tests/run_unprivileged.sh

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

bench: $(STAMP)
	$(PY) bench/run.py

# The soak alone (make bench runs it after the timed benchmarks): bench/soak.py.
soak: $(STAMP)
	$(PY) bench/soak.py

# A client that reads nothing for 60 s while a tool floods (make bench runs it last).
paused: $(STAMP)
	$(PY) bench/paused.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache

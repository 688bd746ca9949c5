"""bench/run.py rewrites bench/RESULTS.md without dropping the sections other benches wrote."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "run.py"


def _bench_run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


OLD = """# Benchmark results

| old table |

## What the hot path does

old notes

## Soak (`make soak`)

| soak figures |

## Over Streamable HTTP (`bench/http_load.py`, run by `make bench`)

| http figures |
"""

NEW = """# Benchmark results

| new table |

## What the hot path does

new notes
"""


def test_sections_written_by_other_benches_are_kept_in_order() -> None:
    kept = _bench_run().kept_sections(OLD, NEW)
    assert kept == (
        "\n## Soak (`make soak`)\n\n| soak figures |\n"
        "\n## Over Streamable HTTP (`bench/http_load.py`, run by `make bench`)\n\n"
        "| http figures |\n"
    )
    assert "old notes" not in kept


def test_nothing_is_kept_twice_or_invented() -> None:
    run = _bench_run()
    assert run.kept_sections("", NEW) == ""
    assert run.kept_sections(OLD, OLD) == ""

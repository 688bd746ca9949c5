"""Every planted regression of ``make mutants`` still finds its line (tests/mutants.py).

A mutant whose ``old`` text no longer occurs exactly once in its file cannot be planted,
so ``make mutants`` would stop on it; this keeps the list in step with the code it mutates
in every run of the suite, without planting anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutants import MUTANTS, Mutant

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_the_mutant_finds_its_line_exactly_once(mutant: Mutant) -> None:
    path = REPO / mutant.path
    assert path.exists(), f"{mutant.path} does not exist"
    found = path.read_text().count(mutant.old)
    assert found == 1, f"{mutant.name}: its text occurs {found} times in {mutant.path}"


def test_the_mutants_name_tests_that_exist() -> None:
    for mutant in MUTANTS:
        for node in mutant.tests:
            assert (REPO / node.split("::")[0]).exists(), f"{mutant.name}: no {node}"

"""Hostile implementations and suites aimed at the shortcuts taken for speed.

Each shortcut keeps something from an earlier moment instead of computing it again: a
snapshot whose dicts' version tags say nothing changed, a function's signature read
once, a result kept as it is when scrubbing and bounding would not change it, a suite
parsed group by group and cached as columns, a worker handed its next case before its
last answer is judged, the command line importing what a command needs only when it
runs. Each test here tries to make what was kept differ from what is true, and asserts
the truthful outcome; it fails if the shortcut ever stops noticing.
"""

from __future__ import annotations

import textwrap


from cer.model import RunResult, Status
from support import Module

PASS, FAIL, ERRORED = Status.PASS, Status.FAIL, Status.ERRORED


def two_cases(first: str, second: str) -> str:
    """A suite of two cases, ``x = 1`` then ``x = 2``, with the given expect tables."""
    return textwrap.dedent(
        f"""\
        commonsformat_evals = "0.2"
        target = "t"

        [[cases]]
        name = "first"
        category = "functional"
        input = {{ x = 1 }}
        expect = {first}

        [[cases]]
        name = "second"
        category = "functional"
        input = {{ x = 2 }}
        expect = {second}
        """
    )


def outcome(result: RunResult) -> list[tuple[Status, str]]:
    return [(r.status, r.reason or "") for r in result.results]


# --- the state check without isolation -----------------------------------------------

# The first case puts another dict in the place os.environ reads from: no dict the
# snapshot watches changes (their version tags stay), yet every variable the next case
# sees is different.
SWAPS_THE_ENVIRONMENT = """
import os

def f(x):
    seen = os.environ.get("CER_RED_LEAK", "none")
    if x == 1:
        store = dict(os.environ._data)
        store[b"CER_RED_LEAK"] = b"leaked"
        os.environ._data = store
    return {"output": seen}
"""


def test_a_case_that_swaps_the_environment_store_does_not_leak_into_the_next(
    module: Module,
) -> None:
    module.suite(two_cases('{ output = "none" }', '{ output = "none" }'))
    name = module.impl(SWAPS_THE_ENVIRONMENT)
    result = module.run(f"{name}:f", isolation="none", jobs=1)
    # The first case is judged on what it returned; its change of state is noticed
    # and the worker replaced, so the second case starts from the true environment.
    assert result.results[0].status is PASS
    assert "changed environment variables" in result.results[0].stderr, outcome(result)
    assert outcome(result)[1] == (PASS, ""), outcome(result)

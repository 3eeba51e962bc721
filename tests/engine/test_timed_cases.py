"""Cases with a runner-measured time bound run after the others, with no other case in
flight (unless --parallel-bounds), and their reasons give times as people read them."""

from __future__ import annotations

import argparse

import pytest

from cer.categories import build_registry
from cer.config import add_run_arguments, resolve_run
from cer.engine.options import RunOptions
from cer.engine.plan import plan
from cer.judge.compare import compare
from cer.suite.loader import load_suite
from support import Module

SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "slow-a"
category = "functional"
input = { name = "a" }
expect = { output = "a" }

[[cases]]
name = "timed"
category = "functional"
input = { name = "timed" }
expect = { output = "timed", elapsed_ms_max = 5000 }

[[cases]]
name = "slow-b"
category = "functional"
input = { name = "b" }
expect = { output = "b" }

[[cases]]
name = "slow-c"
category = "functional"
input = { name = "c" }
expect = { output = "c" }
"""

IMPL = """
import time

def f(name):
    print("start", time.time())
    time.sleep(0.3)
    print("end", time.time())
    return name
"""


def _window(stdout: str) -> tuple[float, float]:
    words = dict(line.split() for line in stdout.splitlines())
    return float(words["start"]), float(words["end"])


@pytest.mark.slow
def test_a_timed_case_runs_with_no_other_in_flight(module: Module) -> None:
    module.suite(SUITE)
    run = module.run(f"{module.impl(IMPL)}:f", jobs=2, isolation="none")
    assert [r.status.value for r in run.results] == ["pass"] * 4
    windows = {r.case_name: _window(r.stdout) for r in run.results}
    start, end = windows.pop("timed")
    for other_start, other_end in windows.values():
        assert other_end <= start or other_start >= end  # no overlap
    # Results stay in declared order whatever the order they ran in.
    assert [r.case_name for r in run.results] == ["slow-a", "timed", "slow-b", "slow-c"]


def test_plan_marks_timed_cases_unless_parallel_bounds(module: Module) -> None:
    module.suite(SUITE)
    suite = load_suite(module.root / "evals.toml")
    registry = build_registry({})
    runnable, _ = plan(suite, RunOptions(impl="m:f"), registry)
    assert [item.case.name for item in runnable if item.timed] == ["timed"]
    runnable, _ = plan(suite, RunOptions(impl="m:f", parallel_bounds=True), registry)
    assert not any(item.timed for item in runnable)


def test_parallel_bounds_is_an_option_of_cer_run_and_cer_tui(module: Module) -> None:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    suite = str(module.suite(SUITE))
    args = parser.parse_args([suite, "--impl", "m:f", "--parallel-bounds"])
    assert resolve_run(args).options.parallel_bounds
    args = parser.parse_args([suite, "--impl", "m:f"])
    assert not resolve_run(args).options.parallel_bounds


@pytest.mark.parametrize(
    ("bound", "observed", "shown"),
    [
        (1000, 1129.4466920007835, "expected elapsed_ms <= 1000, observed 1129 ms"),
        (1000, 1000.4, "observed 1000.4 ms"),
        (5, 7.25, "observed 7.2 ms"),
    ],
)
def test_a_missed_bound_gives_times_for_people(bound: int, observed: float, shown: str) -> None:
    mismatches = compare({"elapsed_ms_max": bound}, {"elapsed_ms": observed})
    assert len(mismatches) == 1
    assert shown in mismatches[0].message
    assert mismatches[0].observed == observed  # the evidence keeps the exact value

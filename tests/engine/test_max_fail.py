"""``--max-fail N`` / ``-x``: a run stops handing out cases after N failed or errored
cases; the rest are reported skipped as not run, never passed, and the run says so."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cer.cli.exits import ExitCode
from cer.engine.options import STOPPED, RunOptions, stopped_reason
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.suite.loader import load_suite
from support import EXAMPLES, Module, cer_in_process


def suite_text(count: int) -> str:
    """``count`` cases asking for their own number doubled; the implementation below
    gets the cases whose number is in its ``BAD`` set wrong."""
    cases = "".join(
        f'[[cases]]\nname = "c{i:02d}"\ncategory = "functional"\ninput = {{ x = {i} }}\n'
        f"expect = {{ output = {2 * i} }}\n\n"
        for i in range(count)
    )
    return f'commonsformat_evals = "0.2"\ntarget = "t"\n\n{cases}'


IMPL = """
BAD = {bad}

def double(x):
    if x in BAD:
        return x * 3
    return x * 2
"""


def stopped_run(module: Module, bad: set[int], count: int = 12, **options: object) -> RunResult:
    module.suite(suite_text(count))
    name = module.impl(IMPL.format(bad=sorted(bad) or "set()"))
    return module.run(f"{name}:double", **options)


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_the_run_stops_after_the_first_failure_and_reports_the_rest_not_run(
    module: Module, isolation: str
) -> None:
    run = stopped_run(module, {3, 7}, isolation=isolation, jobs=1, max_fail=1)
    statuses = [r.status for r in run.results]
    assert statuses[:3] == [Status.PASS] * 3
    assert statuses[3] is Status.FAIL
    # No case was handed out after the failure: not even the one the worker would
    # otherwise get before the failing answer is judged.
    assert statuses[4:] == [Status.SKIPPED] * 8
    assert all(r.reason == stopped_reason(1) for r in run.results[4:])
    assert run.summary.verdict == "nonconformant"
    assert any("stopped after 1 failed or errored case" in note for note in run.notes)
    assert any("8 cases were not run" in note for note in run.notes)


def test_errored_cases_count_and_decided_ones_do_not(module: Module) -> None:
    module.suite(
        suite_text(6)
        + '[[cases]]\nname = "nothing"\ncategory = "functional"\ninput = { x = 1 }\n\n'
    )
    name = module.impl(
        """
def double(x):
    if x == 2:
        raise SystemExit(1)
    return x * 3 if x == 4 else x * 2
"""
    )
    run = module.run(f"{name}:double", jobs=1, max_fail=2)
    got = {r.case_name: r.status for r in run.results}
    # "nothing" verifies nothing: errored before running, it counts for no limit.
    assert got["nothing"] is Status.ERRORED
    assert [got[f"c{i:02d}"] for i in range(6)] == [
        Status.PASS,
        Status.PASS,
        Status.ERRORED,
        Status.PASS,
        Status.FAIL,
        Status.SKIPPED,
    ]


def test_with_several_workers_no_case_passes_unrun_and_order_holds(module: Module) -> None:
    run = stopped_run(module, {2, 3, 4, 5}, count=30, jobs=2, max_fail=2)
    assert [r.case_name for r in run.results] == [f"c{i:02d}" for i in range(30)]
    failed = [r for r in run.results if r.status is Status.FAIL]
    skipped = [r for r in run.results if r.status is Status.SKIPPED]
    # The two lanes finish what they hold when the limit is reached: two failures, or
    # three when the other lane's case in flight also fails.
    assert 2 <= len(failed) <= 3
    assert skipped and all((r.reason or "").startswith(STOPPED) for r in skipped)
    for r in run.results:
        if r.status is Status.PASS:
            assert int(r.case_name[1:]) not in {2, 3, 4, 5}
    assert len(run.results) == 30


def test_a_run_below_the_limit_runs_everything(module: Module) -> None:
    run = stopped_run(module, {1}, jobs=1, max_fail=2)
    assert [r.status for r in run.results].count(Status.SKIPPED) == 0
    assert not any("stopped" in note for note in run.notes)


HARNESS = EXAMPLES / "harnesses" / "calc_harness.py"
CALC_SUITE = EXAMPLES / "calc" / "evals.toml"


@pytest.mark.parametrize(("kind", "extra"), [("command", ""), ("command-per-case", " --per-case")])
def test_commands_stop_too(kind: str, extra: str) -> None:
    sloppy = EXAMPLES / "calc" / "calc_sloppy.py"
    command = f"{shlex.quote(sys.executable)} {HARNESS} --module {sloppy}{extra}"
    options = RunOptions(impl=command, kind=kind, max_fail=1, timeout=5.0)  # type: ignore[arg-type]
    run = run_suite(load_suite(CALC_SUITE), options)
    statuses = [r.status for r in run.results]
    first = next(i for i, s in enumerate(statuses) if s in (Status.FAIL, Status.ERRORED))
    assert Status.FAIL in statuses[first : first + 1]
    after = run.results[first + 1 :]
    assert after and all(r.status is Status.SKIPPED for r in after)
    assert any((r.reason or "").startswith(STOPPED) for r in after)
    assert not any((r.reason or "").startswith(STOPPED) for r in run.results[:first])


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cer ARGS`` from ``cwd``, in this process: the exit code and streams are a
    process's (tests/cli/test_run.py runs a real one)."""
    return cer_in_process(args, cwd)


def test_cli_x_exits_failed_and_the_verdict_says_stopped(module: Module) -> None:
    module.suite(suite_text(10))
    name = module.impl(IMPL.format(bad=[1]))
    done = cli(
        ["run", "evals.toml", "--impl", f"{name}:double", "-x", "-j", "1", "--no-history"],
        module.root,
    )
    assert done.returncode == ExitCode.FAILED, done.stderr
    assert "nonconformant, stopped early: 8 of 10 cases not run" in done.stdout
    as_json = cli(
        [
            "run",
            "evals.toml",
            "--impl",
            f"{name}:double",
            "--max-fail",
            "1",
            "-j",
            "1",
            "--no-history",
            "--format",
            "json",
        ],
        module.root,
    )
    document = json.loads(as_json.stdout)
    assert document["summary"]["cases_passed"] == 1
    assert document["summary"]["cases_skipped"] == 8


@pytest.mark.parametrize("value", ["0", "-1", "some"])
def test_cli_refuses_a_bad_limit(module: Module, value: str) -> None:
    module.suite(suite_text(2))
    done = cli(["run", "evals.toml", "--impl", "x:y", "--max-fail", value], module.root)
    assert done.returncode == ExitCode.USAGE
    assert "--max-fail" in done.stderr
    assert "Traceback" not in done.stderr

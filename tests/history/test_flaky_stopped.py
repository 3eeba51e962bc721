"""Flaky means the same code gave different results: a case a stopped run (``-x``,
``--max-fail``) never reached has no status, like a deselected one, so the next full
run of the same code does not mark it flaky."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cer.cli.main import main
from cer.history.database import History
from cer.history.recall import record_run
from cer.model import Status
from cer.suite.loader import load_suite
from support import Module

SUITE = "".join(
    f'[[cases]]\nname = "c{i}"\ncategory = "functional"\ninput = {{ x = {i} }}\n'
    f"expect = {{ output = {2 * i} }}\n\n"
    for i in range(5)
)

IMPL = """
def double(x):
    return x * 3 if x == 1 else x * 2
"""


def test_cases_a_stopped_run_left_out_are_not_flaky(module: Module, tmp_path: Path) -> None:
    path = module.suite(f'commonsformat_evals = "0.2"\ntarget = "t"\n\n{SUITE}')
    suite = load_suite(path)
    name = module.impl(IMPL)
    stopped = module.run(f"{name}:double", jobs=1, max_fail=1)
    assert [r.status for r in stopped.results][2:] == [Status.SKIPPED] * 3
    full = module.run(f"{name}:double", jobs=1)
    assert full.implementation_id == stopped.implementation_id
    assert [r.status for r in full.results][2:] == [Status.PASS] * 3
    with History.open(tmp_path / "history.sqlite") as history:
        assert record_run(history, stopped, suite) == frozenset()
        assert record_run(history, full, suite) == frozenset()
        assert history.flaky() == ()
        # the same code giving another status is still flaky
        changed = replace(full.results[3], status=Status.FAIL, reason="why")
        again = replace(
            full, run_id="f" * 32, results=(*full.results[:3], changed, full.results[4])
        )
        assert record_run(history, again, suite) == frozenset({"c3"})


def test_cer_run_x_then_a_full_run_marks_nothing_flaky(
    module: Module, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = module.suite(f'commonsformat_evals = "0.2"\ntarget = "t"\n\n{SUITE}')
    name = module.impl(IMPL)
    history = str(tmp_path / "history.sqlite")
    common = [str(path), "--impl", f"{name}:double", "--history", history, "--format", "json"]
    assert main(["run", *common, "-x", "-j", "1"]) == 1
    stopped = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in stopped["results"]][2:] == ["skipped"] * 3
    assert main(["run", *common]) == 1
    full = json.loads(capsys.readouterr().out)
    assert full["flaky"] == []
    assert not any(r.get("flaky") for r in full["results"])


def test_a_stopped_run_is_partial_and_stands_for_no_lost_run(
    module: Module, tmp_path: Path
) -> None:
    """A run that stopped before some cases ran part of the suite: ``cer history`` marks
    it partial, and it does not stand in for a run the history lost (the gap mark that
    sends ``cer run --failed`` over the whole suite stays)."""
    from cer.history.gaps import has_gap, mark_gap, ran_whole_suite

    path = module.suite(f'commonsformat_evals = "0.2"\ntarget = "t"\n\n{SUITE}')
    suite = load_suite(path)
    name = module.impl(IMPL)
    stopped = module.run(f"{name}:double", jobs=1, max_fail=1)
    full = module.run(f"{name}:double", jobs=1)
    assert not ran_whole_suite(stopped)
    assert ran_whole_suite(full)
    db = tmp_path / "history.sqlite"
    with History.open(db) as history:
        record_run(history, full, suite)
        mark_gap(db, suite.path)
        record_run(history, stopped, suite)
        assert has_gap(db, suite.path)
        partial = {record.run_id: record.partial for record in history.runs(2)}
    assert partial == {stopped.run_id: True, full.run_id: False}

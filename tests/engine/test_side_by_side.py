"""Several implementations side by side: the matrix shares the ``-j`` budget across
implementations instead of running them one after another; each run's results stay in
declared order and are what the run would be alone; the runs never end each other's
processes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cer.engine.options import RunOptions
from cer.engine.side_by_side import run_side_by_side, share_jobs
from cer.events import CaseFinished, RunEvent
from cer.model import RunResult, Status
from cer.results import serialize
from cer.suite.loader import load_suite
from support import EXAMPLES, Module

CALC = EXAMPLES / "calc"
HARNESS = EXAMPLES / "harnesses" / "calc_harness.py"


def py(impl: str, **extra: Any) -> RunOptions:
    return RunOptions(impl=impl, paths=(str(CALC),), timeout=10.0, **extra)


def command() -> RunOptions:
    return RunOptions(impl=f"{shlex.quote(sys.executable)} {HARNESS}", kind="command", timeout=10.0)


@pytest.mark.parametrize(
    ("budget", "kinds", "expected"),
    [
        (1, ["python", "python", "python"], (1, [1, 1, 1])),
        (2, ["python", "python", "python"], (2, [1, 1, 1])),
        (3, ["python", "python", "python"], (3, [1, 1, 1])),
        (5, ["python", "python"], (2, [3, 2])),
        (4, ["python", "command", "python"], (3, [2, 1, 1])),
        (6, ["command", "command"], (2, [1, 1])),
    ],
)
def test_the_budget_is_shared(
    budget: int, kinds: list[str], expected: tuple[int, list[int]]
) -> None:
    implementations = [
        RunOptions(impl="m:f", kind=kind)  # type: ignore[arg-type]
        for kind in kinds
    ]
    assert share_jobs(budget, implementations) == expected


def comparable(run: RunResult) -> list[tuple[str, Status, str | None, str]]:
    """A run's results without the times."""
    rows = []
    for result in run.results:
        observation = dict(result.observation or {})
        observation.pop("elapsed_ms", None)
        rows.append(
            (result.case_name, result.status, result.reason, json.dumps(observation, default=repr))
        )
    return rows


def test_side_by_side_gives_the_results_of_one_after_another() -> None:
    suite = load_suite(CALC / "evals.toml")
    names = [case.name for case in suite.cases]
    chosen = [py("calc_ref:evaluate"), py("calc_sloppy:evaluate"), command()]
    serial = run_side_by_side(suite, [replace_jobs(o, 1) for o in chosen])
    events: list[tuple[int, RunEvent]] = []
    finished: list[int] = []
    parallel = run_side_by_side(
        suite,
        [replace_jobs(o, 4) for o in chosen],
        on_event=lambda index, event: events.append((index, event)),
        on_finished=lambda index, run: finished.append(index),
    )
    assert len(parallel) == 3
    for alone, beside in zip(serial, parallel, strict=True):
        assert [r.case_name for r in beside.results] == names  # declared order
        assert comparable(beside) == comparable(alone)
    assert sorted(finished) == [0, 1, 2]
    done = [index for index, event in events if isinstance(event, CaseFinished)]
    assert sorted(set(done)) == [0, 1, 2] and len(done) == 3 * len(names)
    # The three ran at once: events of the three interleave.
    assert done[: len(names)] != [done[0]] * len(names)
    assert parallel[1].summary.failed == 8


def replace_jobs(options: RunOptions, jobs: int) -> RunOptions:
    from dataclasses import replace

    return replace(options, jobs=jobs)


SLEEPY = """
import os, time

def slow(x):
    started = time.time()
    time.sleep(0.15)
    with open(os.environ["CER_TEST_LOG"], "a") as log:
        log.write(f"{NAME} {started} {time.time()}\\n")
    return x
"""

KILLER = """
import os, signal

def kill(x):
    if x % 2:
        os.kill(os.getppid(), signal.SIGKILL)  # the worker: its lane is lost
    return x
"""


def identity_suite(count: int) -> str:
    cases = "".join(
        f'[[cases]]\nname = "c{i:02d}"\ncategory = "functional"\ninput = {{ x = {i} }}\n'
        f"expect = {{ output = {i} }}\n\n"
        for i in range(count)
    )
    return f'commonsformat_evals = "0.2"\ntarget = "t"\n\n{cases}'


def test_runs_overlap_and_never_end_each_others_workers(
    module: Module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose workers are lost ends the strays it finds each time; the other run's
    workers, children of the same supervisor, are not among them."""
    log = tmp_path / "log.txt"
    monkeypatch.setenv("CER_TEST_LOG", str(log))
    module.suite(identity_suite(8))
    a = module.impl(SLEEPY.replace("NAME", "'a'"))
    b = module.impl(SLEEPY.replace("NAME", "'b'"))
    killer = module.impl(KILLER)
    # Through the cer program, which adopts orphans: only then does a run end strays.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cer.cli",
            "run",
            "evals.toml",
            "--impl",
            f"{a}:slow",
            "--impl",
            f"{killer}:kill",
            "--impl",
            f"{b}:slow",
            "-j",
            "3",
            "--sandbox",
            "off",
            "--no-history",
            "--format",
            "json",
        ],
        cwd=module.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    runs = [serialize.run_from_dict(run) for run in json.loads(done.stdout)["runs"]]
    for run in (runs[0], runs[2]):
        assert [r.status for r in run.results] == [Status.PASS] * 8, [r.reason for r in run.results]
    lost = [r for r in runs[1].results if r.status is Status.ERRORED]
    assert lost and all("lost this case" in (r.reason or "") for r in lost)
    spans: dict[str, list[tuple[float, float]]] = {"a": [], "b": []}
    for line in log.read_text().splitlines():
        name, start, end = line.split()
        spans[name].append((float(start), float(end)))
    a_start, a_end = min(s for s, _ in spans["a"]), max(e for _, e in spans["a"])
    b_start, b_end = min(s for s, _ in spans["b"]), max(e for _, e in spans["b"])
    assert a_start < b_end and b_start < a_end, "the two runs did not overlap"


def test_a_failing_run_stops_the_others_and_is_raised(module: Module) -> None:
    module.suite(identity_suite(3))
    suite = load_suite(module.root / "evals.toml")
    bad = RunOptions(impl="x:y", jobs=2, timeout=0)  # refused by the runner's checks
    good = RunOptions(impl="x:y", jobs=2)
    with pytest.raises(ValueError, match="timeout"):
        run_side_by_side(suite, [good, bad])

"""Several workers (``jobs``), shards and warm workers: same truth, same order, same events.

A run with N workers must report exactly what a run with one reports (apart from
times), in declared order, with events from the calling thread only; hostile cases in
parallel lanes stay contained; a shard covers its slice and nothing else; a warm worker
is a fresh process that carries nothing from an earlier run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import support
from cer.engine.options import (
    OTHER_SHARD,
    RunCancelled,
    RunOptions,
    in_shard,
    parse_jobs,
    parse_shard,
    resolve_jobs,
)
from cer.engine.python.workerproc import WarmWorkers
from cer.engine.runner import run_suite
from cer.events import CaseFinished, ImplementationLoaded, RunEvent, RunFinished, RunStarted
from cer.model import RunResult, Status
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from support import Module

MIXED = """
commonsformat_evals = "0.2"
target = "mixed"
"""

CASES = [
    # (name, category, input, expect)
    ("passes", "functional", "{ x = 1 }", "{ output = 2 }"),
    ("fails", "functional", "{ x = 2 }", "{ output = 5 }"),
    ("raises-errored", "functional", "{ x = -1 }", "{ output = 0 }"),
    (
        "raises-compared",
        "input-validation",
        "{ x = -2 }",
        '{ rejects = true, error_type = "ValueError" }',
    ),
    ("unsupported", "concurrency", "{ x = 3 }", "{ output = 6 }"),
    ("empty-expect", "functional", "{ x = 4 }", "{}"),
    ("table", "functional", "{ x = 5 }", '{ output = 10, extra = { a = [1, 2.5, "s"] } }'),
    ("table-fails", "functional", "{ x = 6 }", '{ output = 12, extra = { a = [1, 2, "s"] } }'),
    ("nan", "functional", "{ x = 7 }", "{ output = 14, ratio = nan }"),
    ("bool-for-int", "functional", "{ x = 8 }", "{ output = 16, flag = 1 }"),
    ("bound", "functional", "{ x = 9 }", '{ output_max = 20, self_reported = ["output"] }'),
    ("bound-fails", "functional", "{ x = 10 }", '{ output_max = 5, self_reported = ["output"] }'),
    ("deselected-by-test", "functional", "{ x = 11 }", "{ output = 22 }"),
]

IMPL = """
def f(x):
    if x < 0:
        raise ValueError(f"negative: {x}")
    return {"output": x * 2, "extra": {"a": [1, 2.5, "s"]}, "ratio": float("nan"),
            "flag": True}
"""


def mixed_suite(cases: list[tuple[str, str, str, str]] = CASES) -> str:
    parts = [MIXED]
    for name, category, input_, expect in cases:
        parts.append(
            f'[[cases]]\nname = "{name}"\ncategory = "{category}"\n'
            f"input = {input_}\nexpect = {expect}\n"
        )
    return "\n".join(parts)


def untimed(observation: Any) -> str:
    if observation is None:
        return "None"
    return repr({k: v for k, v in observation.items() if k != "elapsed_ms"})


def comparable(run: RunResult) -> list[tuple[Any, ...]]:
    """Everything a result says except times."""
    return [
        (
            r.case_name,
            r.position,
            r.status,
            r.reason,
            r.stdout,
            r.stderr,
            None if r.traceback is None else r.traceback.splitlines()[-1],
            untimed(r.observation),
            tuple(m.message for m in r.mismatches),
        )
        for r in run.results
    ]


@pytest.fixture(params=["fork", "none"])
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# --- options -------------------------------------------------------------------------


def test_parse_jobs() -> None:
    assert parse_jobs("auto") == 0
    assert parse_jobs(" AUTO ") == 0
    assert parse_jobs("3") == 3
    for bad in ("0", "-1", "two", "", "1.5"):
        with pytest.raises(ValueError, match="-j"):
            parse_jobs(bad)


def test_resolve_jobs() -> None:
    assert resolve_jobs(3) == 3
    assert resolve_jobs(0) >= 1


def test_parse_shard() -> None:
    assert parse_shard("2/4") == (2, 4)
    assert parse_shard(" 1/1 ") == (1, 1)
    for bad in ("0/4", "5/4", "2", "2/", "/4", "a/b", "2/4/6", "-1/4"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)


@pytest.mark.parametrize("options", [{"jobs": -1}, {"shard": (0, 2)}, {"shard": (3, 2)}])
def test_nonsense_options_are_refused(module: Module, options: dict[str, Any]) -> None:
    module.suite(mixed_suite())
    with pytest.raises(ValueError):
        module.run(f"{module.impl(IMPL)}:f", **options)


# --- -j: same results, same order ----------------------------------------------------


@pytest.mark.parametrize("jobs", [2, 3, 0])
def test_results_equal_one_worker_in_declared_order(
    module: Module, isolation: str, jobs: int
) -> None:
    module.suite(mixed_suite())
    name = module.impl(IMPL)
    selection = Selection(substrings=tuple(n for n, *_ in CASES if n != "deselected-by-test"))
    one = module.run(f"{name}:f", isolation=isolation, selection=selection)
    many = module.run(f"{name}:f", isolation=isolation, selection=selection, jobs=jobs)
    assert comparable(many) == comparable(one)
    assert [r.case_name for r in many.results] == [n for n, *_ in CASES]
    assert many.implementation_id == one.implementation_id
    statuses = {r.case_name: r.status for r in many.results}
    assert statuses["passes"] is Status.PASS
    assert statuses["fails"] is Status.FAIL
    assert statuses["raises-errored"] is Status.ERRORED
    assert statuses["raises-compared"] is Status.PASS
    assert statuses["unsupported"] is Status.SKIPPED
    assert statuses["bool-for-int"] is Status.FAIL
    assert statuses["deselected-by-test"] is Status.SKIPPED


def test_many_cases_on_several_workers_keep_order(module: Module, isolation: str) -> None:
    cases = [
        (f"case-{i:03d}", "functional", f"{{ x = {i} }}", f"{{ output = {i * 2 if i % 7 else i} }}")
        for i in range(1, 61)
    ]
    module.suite(mixed_suite(cases))
    name = module.impl("def f(x):\n    return x * 2\n")
    one = module.run(f"{name}:f", isolation=isolation)
    many = module.run(f"{name}:f", isolation=isolation, jobs=3)
    assert comparable(many) == comparable(one)
    assert [r.position for r in many.results] == list(range(1, 61))
    assert many.summary.failed == len([i for i in range(1, 61) if i % 7 == 0])


def test_events_come_from_the_calling_thread_one_at_a_time(module: Module) -> None:
    module.suite(mixed_suite())
    name = module.impl(IMPL)
    caller = threading.get_ident()
    seen: list[RunEvent] = []
    busy = threading.Lock()
    threads: set[int] = set()

    def on_event(event: RunEvent) -> None:
        assert busy.acquire(blocking=False), "on_event was called concurrently"
        try:
            threads.add(threading.get_ident())
            seen.append(event)
            time.sleep(0.001)  # widen any window in which a second call could overlap
        finally:
            busy.release()

    run = run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(impl=f"{name}:f", jobs=3, timeout=5.0),
        on_event=on_event,
    )
    assert threads == {caller}
    assert isinstance(seen[0], RunStarted)
    assert isinstance(seen[1], ImplementationLoaded)
    assert isinstance(seen[-1], RunFinished)
    finished = [e for e in seen if isinstance(e, CaseFinished)]
    assert [e.done for e in finished] == list(range(1, len(CASES) + 1))
    assert sorted(e.result.position for e in finished) == list(range(1, len(CASES) + 1))
    assert len(run.results) == len(CASES)


# --- hostile behaviour in parallel lanes --------------------------------------------

HOSTILE_SUITE = """
commonsformat_evals = "0.2"
target = "hostile"
{cases}
"""

HOSTILE_IMPL = """
import os, signal, sys, time

def _state():  # each case's own scratch folder aside
    scratch = ("TMPDIR", "TEMP", "TMP")
    return os.getcwd(), {k: v for k, v in os.environ.items() if k not in scratch}

BASE = _state()

def f(x):
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    if x == 3:
        while True:
            pass
    if x == 4:
        os._exit(0)
    if x == 5:
        os.chdir("/")
        os.environ["LEAKED"] = "1"
        print("case 5")
        return {"output": 10, "clean": True}
    if x == 6:
        import ctypes
        ctypes.string_at(0)
    print(f"case {x}")
    return {"output": x * 2, "clean": _state() == BASE}
"""


def hostile_cases(count: int) -> str:
    parts = []
    for x in range(1, count + 1):
        parts.append(
            f'[[cases]]\nname = "c{x:02d}"\ncategory = "functional"\n'
            f"input = {{ x = {x} }}\nexpect = {{ output = {x * 2}, clean = true }}\n"
        )
    return HOSTILE_SUITE.format(cases="\n".join(parts))


@pytest.mark.parametrize("jobs", [1, 2])
def test_crash_and_timeout_in_parallel_lanes_stay_contained(
    module: Module, isolation: str, jobs: int
) -> None:
    module.suite(hostile_cases(10))
    run = module.run(f"{module.impl(HOSTILE_IMPL)}:f", isolation=isolation, timeout=1.0, jobs=jobs)
    got = {r.case_name: r for r in run.results}
    assert [r.case_name for r in run.results] == [f"c{x:02d}" for x in range(1, 11)]
    for name in ("c02", "c03", "c04", "c06"):
        assert got[name].status is Status.ERRORED, (name, got[name].reason)
    assert "timed out after 1 s" in (got["c03"].reason or "")
    # The case that changed state passes itself; the cases after it see a clean process.
    for name in ("c01", "c05", "c07", "c08", "c09", "c10"):
        assert got[name].status is Status.PASS, (name, got[name].reason, got[name].stderr)
        assert got[name].stdout.startswith(f"case {int(name[1:])}")
    if isolation == "none":
        assert "recycled" in got["c05"].stderr


def test_hostile_results_equal_one_worker(module: Module, isolation: str) -> None:
    module.suite(hostile_cases(10))
    name = module.impl(HOSTILE_IMPL)
    one = module.run(f"{name}:f", isolation=isolation, timeout=1.0)
    two = module.run(f"{name}:f", isolation=isolation, timeout=1.0, jobs=2)
    assert comparable(two) == comparable(one)


KILL_WORKER_IMPL = """
import os, signal, time
def f(x):
    if x in (2, 5):
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(5)
    return {"output": x * 2, "clean": True}
"""


def test_a_lost_worker_costs_only_its_own_case(module: Module) -> None:
    module.suite(hostile_cases(8))
    # Without the sandbox, which refuses the signal to the worker.
    run = module.run(f"{module.impl(KILL_WORKER_IMPL)}:f", timeout=2.0, jobs=2, sandbox="off")
    statuses = {r.case_name: r.status for r in run.results}
    assert statuses == {
        f"c{x:02d}": Status.ERRORED if x in (2, 5) else Status.PASS for x in range(1, 9)
    }
    for name in ("c02", "c05"):
        assert "the runner lost this case" in (run.result(name).reason or "")


def test_the_battery_holds_with_two_workers(module: Module) -> None:
    """Every behaviour of the hostile battery, run with two workers."""
    path = (support.ROOT / "tests" / "hostile") / "test_hostile_battery.py"
    spec = importlib.util.spec_from_file_location("hostile_battery_for_jobs", path)
    assert spec is not None and spec.loader is not None
    battery = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = battery  # its dataclasses look their module up
    try:
        spec.loader.exec_module(battery)
    finally:
        del sys.modules[spec.name]
    chosen = [
        "kill-the-worker",
        "stop-itself",
        "change-cwd",
        "alarm-left-armed",
        "garbage-to-every-descriptor",
        "fake-results-on-stdout-and-stderr",
        "sleep-in-finally",
        "tracer-left-installed",
        "monkeypatch-cer",
    ]
    for name in chosen:
        hostile = battery.HOSTILE[name]
        for isolation in hostile.isolations:
            module.suite(battery.SUITE.format(second=hostile.expect))
            impl = module.impl(battery._impl_source(hostile.body))
            run = module.run(
                f"{impl}:f", timeout=hostile.timeout, isolation=isolation, jobs=2, **hostile.options
            )
            got = [r.status for r in run.results]
            assert got == [Status.PASS, hostile.status_for(isolation), Status.PASS], (
                name,
                isolation,
                [(r.case_name, r.reason) for r in run.results],
            )
            if hostile.reason:
                assert hostile.reason in (run.results[1].reason or ""), (name, isolation)


# --- cancel ---------------------------------------------------------------------------

PID_IMPL = """
import os, time
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, f"worker-{os.getpid()}.pid"), "w") as handle:
    handle.write(str(os.getpid()))

def f(x):
    with open(os.path.join(HERE, f"case-{os.getpid()}.pid"), "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(30)
    return {"output": x * 2, "clean": True}
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_cancel_stops_every_worker(module: Module) -> None:
    module.suite(hostile_cases(6))
    name = module.impl(PID_IMPL)
    cancel = threading.Event()

    def on_event(event: RunEvent) -> None:
        if isinstance(event, ImplementationLoaded):

            def cancel_when_both_run() -> None:
                deadline = time.monotonic() + 20
                while len(list(module.root.glob("case-*.pid"))) < 2:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)
                cancel.set()

            threading.Thread(target=cancel_when_both_run, daemon=True).start()

    with pytest.raises(RunCancelled):
        run_suite(
            load_suite(module.root / "evals.toml"),
            # Without the sandbox: each case writes its pid beside the suite.
            RunOptions(impl=f"{name}:f", jobs=2, timeout=60.0, sandbox="off"),
            on_event=on_event,
            cancel=cancel,
        )
    pids = [int(p.read_text()) for p in module.root.glob("*.pid")]
    assert len([p for p in module.root.glob("worker-*.pid")]) == 2
    assert len([p for p in module.root.glob("case-*.pid")]) >= 2
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [pid for pid in pids if _alive(pid)]


# --- shards ---------------------------------------------------------------------------


def test_in_shard_rule() -> None:
    assert [p for p in range(1, 11) if in_shard(p, (2, 4))] == [2, 6, 10]
    assert all(in_shard(p, None) for p in range(1, 5))
    assert all(in_shard(p, (1, 1)) for p in range(1, 5))


@pytest.mark.parametrize("count", [1, 2, 3, 5, 13, 20])
def test_every_case_runs_in_exactly_one_shard(module: Module, count: int) -> None:
    module.suite(mixed_suite())
    name = module.impl(IMPL)
    full = module.run(f"{name}:f", isolation="none")
    owners: dict[str, list[int]] = {r.case_name: [] for r in full.results}
    for index in range(1, count + 1):
        run = module.run(f"{name}:f", isolation="none", shard=(index, count))
        assert [r.case_name for r in run.results] == [r.case_name for r in full.results]
        for result, whole in zip(run.results, full.results, strict=True):
            if result.status is Status.SKIPPED and result.reason == OTHER_SHARD:
                assert not in_shard(result.position, (index, count))
                continue
            assert in_shard(result.position, (index, count))
            owners[result.case_name].append(index)
            assert comparable_one(result) == comparable_one(whole)
        if count > 1:
            assert any("shard" in note for note in run.notes)
    assert all(len(shards) == 1 for shards in owners.values()), owners


def comparable_one(result: Any) -> tuple[Any, ...]:
    return (result.case_name, result.status, result.reason, untimed(result.observation))


def test_shard_comes_before_deselection(module: Module) -> None:
    module.suite(mixed_suite())
    name = module.impl(IMPL)
    run = module.run(f"{name}:f", shard=(1, 2), selection=Selection(case_globs=("passes",)))
    reasons = [r.reason for r in run.results]
    assert reasons[0] is None  # "passes", position 1, in shard 1 and selected
    assert reasons[1] == OTHER_SHARD
    assert reasons[2] == "deselected"


# --- warm workers ---------------------------------------------------------------------

COUNTING_IMPL = """
import os
IMPORTS = []
IMPORTS.append(os.getpid())

def f(x):
    try:
        world = os.readlink("/proc/self/ns/pid")
    except OSError:
        world = ""
    return {
        "output": x * 2, "clean": len(IMPORTS) == 1, "worker": os.getppid(), "world": world
    }
"""


class _WorldOf:
    """The PID namespace the worker known to the supervisor as ``pid`` gave its
    children, read while the run goes on (from its events): inside a world of its own
    that process is a relay and the worker, whose forks run the cases, lives in the
    namespace the relay made. None while it is the supervisor's own (no world)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.namespace: str | None = None

    def __call__(self, event: object) -> None:
        if self.namespace is None:
            with contextlib.suppress(OSError):
                theirs = os.readlink(f"/proc/{self.pid}/ns/pid_for_children")
                if theirs != os.readlink("/proc/self/ns/pid"):
                    self.namespace = theirs

    def ran(self, results: Any) -> bool:
        """Whether every case of ``results`` ran in a fork of that worker."""
        observed = [r.observation for r in results if r.observation]
        if self.namespace is not None:
            return {o["world"] for o in observed} == {self.namespace}
        return {o["worker"] for o in observed} == {self.pid}


def test_warm_worker_is_fresh_and_used(module: Module, isolation: str) -> None:
    module.suite(
        hostile_cases(3).replace(
            "clean = true", 'clean = true, worker_min = 1, self_reported = ["worker"]'
        )
    )
    name = module.impl(COUNTING_IMPL)
    warm = WarmWorkers(1)
    try:
        warm.fill()
        waiting = warm._ready[0].process.pid
        options = RunOptions(impl=f"{name}:f", isolation=isolation, timeout=5.0)
        seen = _WorldOf(waiting)
        first = run_suite(load_suite(module.root / "evals.toml"), options, warm=warm, on_event=seen)
        assert all(r.status is Status.PASS for r in first.results), first.results
        if isolation == "fork":
            assert seen.ran(first.results)
        # The run refilled the pool with a new process; the old one is gone.
        assert len(warm._ready) == 1
        again = warm._ready[0].process.pid
        assert again != waiting
        seen = _WorldOf(again)
        second = run_suite(
            load_suite(module.root / "evals.toml"), options, warm=warm, on_event=seen
        )
        assert all(r.status is Status.PASS for r in second.results), second.results
        if isolation == "fork":
            assert seen.ran(second.results)
    finally:
        warm.close()


def test_stale_warm_worker_is_not_handed_out(tmp_path: Path) -> None:
    warm = WarmWorkers(1)
    try:
        warm.fill()
        worker = warm._ready[0]
        assert worker.fresh
        previous = os.getcwd()
        os.chdir(tmp_path)
        try:
            assert warm.take() is None  # started in another working directory
        finally:
            os.chdir(previous)
        assert worker.closed
        warm.fill()
        taken = warm.take()
        assert taken is not None and taken.fresh
        taken.send({"op": "quit"})
        assert not taken.fresh
        taken.close()
    finally:
        warm.close()


def test_closed_pool_starts_nothing() -> None:
    warm = WarmWorkers(2)
    warm.fill()
    warm.close()
    warm.fill()
    assert warm.take() is None

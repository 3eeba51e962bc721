"""The next case is handed over before the last answer is judged: what that must not change.

As soon as a worker's answer is known to be the one result of the case in flight (and
the worker stays), the supervisor hands that worker its next case, then decodes and
judges the answer while the next case runs. Still one case in flight per worker; each
test here is a worker that tries to take advantage of the overlap: answering the next
case before it was handed over, or dying right after its answer while the next case is
already in its hands.
"""

from __future__ import annotations

import itertools
import textwrap
from collections import deque
from pathlib import Path

import pytest

from cer.engine.execution import Setup
from cer.engine.options import RunOptions
from cer.engine.plan import Planned
from cer.engine.python import pool
from cer.engine.python.pool import WorkerPool, _Lane
from cer.engine.python.workerproc import WorkerLost
from cer.model import RunResult, Status
from cer.suite.loader import load_suite
from support import Module

PASS, FAIL, ERRORED = Status.PASS, Status.FAIL, Status.ERRORED
MODES = ["fork", "none"]


def suite(count: int) -> str:
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for x in range(1, count + 1):
        parts.append(
            f'[[cases]]\nname = "c{x}"\ncategory = "functional"\n'
            f"input = {{ x = {x} }}\nexpect = {{ output = 4 }}\n"
        )
    return "\n".join(parts)


def run(module: Module, source: str, count: int, isolation: str) -> RunResult:
    module.suite(suite(count))
    name = module.impl(textwrap.dedent(source))
    return module.run(f"{name}:f", isolation=isolation, timeout=5.0)


def outcome(result: RunResult) -> list[tuple[Status, str]]:
    return [(r.status, r.reason or "") for r in result.results]


# The worker answers its case and, in the same write, the case that comes next: with
# predictable ids (patched below), a result for the next id that arrives with the last
# answer would be read before that case was handed over.
ANSWERS_AHEAD = """
import sys
from cer.wire import plaindata
from cer.wire.framing import KIND_JSON, KIND_RAW, pack, write_all

worker = sys.modules["cer.worker.main"]
_send = worker.Worker.send

def send(self, message, raw=None):
    if message.get("op") != "result":
        return _send(self, message, raw)
    forged = dict(message, seq=message["seq"] + 1)
    payload = plaindata.dumps({"k": "ret", "v": {"output": 4}})
    if message["exit"].get("how") == "exited":
        payload = pack(KIND_RAW, payload)
    write_all(
        self.ctrl_out,
        pack(KIND_JSON, plaindata.dumps(message)) + pack(KIND_RAW, raw)
        + pack(KIND_JSON, plaindata.dumps(forged)) + pack(KIND_RAW, payload),
    )

worker.Worker.send = send

def f(x):
    return {"output": 4 if x == 1 else 5}
"""


@pytest.mark.parametrize("isolation", MODES)
def test_an_answer_read_before_the_next_case_was_handed_over_answers_nothing(
    module: Module, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = itertools.count(1_000)
    monkeypatch.setattr(pool, "case_id", lambda: next(ids))
    result = run(module, ANSWERS_AHEAD, 3, isolation)
    got = outcome(result)
    assert got[0] == (PASS, "")
    # c2 really returns 5: the forged 4 must never be its answer.
    assert got[1][0] in (ERRORED, FAIL), got
    if got[1][0] is ERRORED:
        assert "answers no case in flight" in got[1][1], got
    else:
        assert got[1][1] == "output: expected int 4, observed int 5", got
    assert got[2] == (FAIL, "output: expected int 4, observed int 5"), got


# The worker answers its second case, waits until the third one is in its channel (the
# supervisor handed it over), then ends without reading it.
DIES_AFTER_ANSWERING = """
import os, select, sys

worker = sys.modules["cer.worker.main"]
_send = worker.Worker.send
answered = []

def send(self, message, raw=None):
    _send(self, message, raw)
    if message.get("op") == "result":
        answered.append(message["seq"])
        if len(answered) == 2:
            select.select([self.ctrl_in], [], [], 5.0)
            os._exit(9)

worker.Worker.send = send

def f(x):
    return {"output": 4}
"""


@pytest.mark.parametrize("isolation", MODES)
def test_a_worker_lost_right_after_its_answer_charges_the_case_it_was_handed_next(
    module: Module, isolation: str
) -> None:
    result = run(module, DIES_AFTER_ANSWERING, 5, isolation)
    got = outcome(result)
    # The answers before the loss keep their own verdicts ...
    assert got[0] == (PASS, "")
    assert got[1] == (PASS, "")
    # ... the case in the worker's hands when it ended gets the loss, once ...
    status, why = got[2]
    assert status is ERRORED, got
    if isolation == "fork":
        assert why == "the runner lost this case: the worker process ended: exited with status 9"
    else:
        assert why == "the case ended the worker process: exited with status 9"
    # ... and the others run on a new worker.
    assert got[3:] == [(PASS, ""), (PASS, "")], got


class _Refuses:
    """A worker whose channel broke: every send fails."""

    def send_case(self, seq: int, body: bytes) -> None:
        raise WorkerLost("the channel broke")


def test_a_case_the_worker_could_not_be_handed_goes_back_to_the_queue(tmp_path: Path) -> None:
    module = Module(tmp_path)
    module.suite(suite(2))
    loaded = load_suite(tmp_path / "evals.toml")
    execution = WorkerPool(Setup(loaded, RunOptions(impl="m:f"), lambda event: None))
    items = [Planned(case, dict(case.input), "functional") for case in loaded.cases]
    execution.pending = deque(items)
    lane = _Lane(0)
    lane.worker = _Refuses()  # type: ignore[assignment]
    execution.hand_next(lane)
    assert list(execution.pending) == items
    assert not lane.in_flight
    assert execution.results == {}


class _Records:
    """A worker that keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send_case(self, seq: int, body: bytes) -> None:
        self.sent.append(body)


def test_a_case_encoded_ahead_is_sent_only_as_itself(tmp_path: Path) -> None:
    module = Module(tmp_path)
    module.suite(suite(3))
    loaded = load_suite(tmp_path / "evals.toml")
    execution = WorkerPool(Setup(loaded, RunOptions(impl="m:f"), lambda event: None))
    first, second, third = (Planned(case, dict(case.input), "functional") for case in loaded.cases)
    execution.pending = deque([first, second])
    execution.encode_ahead()  # the first is encoded ahead ...
    execution.pending.appendleft(third)  # ... then another case goes first (a restart)
    lane = _Lane(0)
    worker = _Records()
    lane.worker = worker  # type: ignore[assignment]
    for _ in range(3):
        lane.in_flight.clear()
        execution.hand_next(lane)
    assert worker.sent == [WorkerPool.encode(item) for item in (third, first, second)]

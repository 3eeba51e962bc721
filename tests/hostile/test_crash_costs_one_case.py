"""A crash costs that case only.

An implementation that crashes the process it runs in (a Python worker with
``--isolation none``, a command harness) on many cases in a row must not leave the
healthy cases after them unrun: each case gets its own try on a restarted process, the
restarts are said in the run's notes, and even a process that crashes on every case
ends the run in a small multiple of its start-up cost.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from cer.engine import restarts
from cer.model import Status
from support import Module, numbered_suite

PYTHON = shlex.quote(sys.executable)

P, E = Status.PASS, Status.ERRORED


CRASHING_FUNCTION = """
import os

def f(n):
    if n <= 6:
        os._exit(9)
    return n
"""


# Six crashes in a row: more than the four after which the runner used to stop
# restarting. Each restart starts an interpreter, which is what the test costs.


def test_a_worker_crashed_by_six_cases_in_a_row_runs_the_cases_after_them(
    module: Module,
) -> None:
    module.suite(numbered_suite(10))
    run = module.run(f"{module.impl(CRASHING_FUNCTION)}:f", isolation="none")
    got = [r.status for r in run.results]
    assert got == [E] * 6 + [P] * 4, [(r.case_name, r.status, r.reason) for r in run.results]
    for result in run.results[:6]:
        assert "ended the worker process" in (result.reason or "")
    (note,) = [note for note in run.notes if "started again" in note]
    assert note.startswith("a worker was started again 6 times after it was lost")
    assert "waiting between restarts" in note


CRASHING_HARNESS = r"""
import json, os, sys

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        send({"op": "started", "protocol": 1,
              "implementation": {"name": "crashy", "version": "1"}})
        continue
    if message["op"] != "run":
        break
    n = message["case"]["input"]["value"]["n"]
    if int(n["value"]) <= int(sys.argv[1]):
        os._exit(3)
    send({"op": "result", "seq": message["seq"], "observation": n})
"""


def test_a_harness_crashed_by_six_cases_in_a_row_runs_the_cases_after_them(
    module: Module, tmp_path: Path
) -> None:
    script = tmp_path / "crashy.py"
    script.write_text(CRASHING_HARNESS, encoding="utf-8")
    module.suite(numbered_suite(10))
    run = module.run(f"{PYTHON} {script} 6", kind="command")
    got = [r.status for r in run.results]
    assert got == [E] * 6 + [P] * 4, [(r.case_name, r.status, r.reason) for r in run.results]
    for result in run.results[:6]:
        assert "exited with status 3 while running this case" in (result.reason or "")
    (note,) = [note for note in run.notes if "started again" in note]
    assert note.startswith("the harness was started again 6 times after it was lost")


def test_a_harness_that_crashes_on_every_case_ends_in_a_multiple_of_its_start_up(
    module: Module, tmp_path: Path
) -> None:
    script = tmp_path / "crashy.py"
    script.write_text(CRASHING_HARNESS, encoding="utf-8")
    module.suite(numbered_suite(10))
    began = time.monotonic()
    run = module.run(f"{PYTHON} {script} 1000", kind="command")
    took = time.monotonic() - began
    assert [r.status for r in run.results] == [E] * 10
    assert not any("not run" in (r.reason or "") for r in run.results)
    (note,) = [note for note in run.notes if "started again" in note]
    # "… (X s starting it again, Y s waiting between restarts) …": waiting never
    # exceeds starting, and the whole run is a small multiple of the starts.
    starting = float(note.split("(")[1].split(" s starting")[0])
    waited = float(note.split("s starting it again, ")[1].split(" s waiting")[0])
    assert waited <= starting + 0.01
    assert took < 3 * starting + 2.0


def test_the_wait_before_restarts_backs_off_within_its_budget() -> None:
    count = restarts.Restarts("the harness", 4)
    count.started(10.0)  # starting took long: only the budget bounds the waits
    delays = [count.take_delay(n) for n in range(1, 8)]
    assert delays[0] == 0.0  # the first restart does not wait
    assert delays[1] == restarts.BACKOFF_FIRST
    assert delays[2] == 2 * restarts.BACKOFF_FIRST
    assert sum(delays) <= count.budget == 4 * restarts.WAIT_PER_CASE
    assert count.delay(50) == 0.0  # the budget is spent: no more waiting
    quick = restarts.Restarts("a worker", 1000)
    quick.started(0.001)
    assert quick.delay(5) <= 0.001  # never longer than the restarts took to start


# The worker ends itself right after it said it loaded the implementation: every worker
# is lost before or just after it takes a case. Each case is charged (lost in its hands,
# or three workers lost before it took it), and none is left "not run".
DIES_AFTER_LOADING = """
import os, sys

worker = sys.modules["cer.worker.main"]
_send = worker.Worker.send

def send(self, message, raw=None):
    _send(self, message, raw)
    if message.get("op") == "loaded" and message.get("ok"):
        os._exit(5)

worker.Worker.send = send

def f(n):
    return n
"""


def test_workers_lost_before_they_take_a_case_cost_each_case_its_own_tries(
    module: Module,
) -> None:
    module.suite(numbered_suite(6))
    run = module.run(f"{module.impl(DIES_AFTER_LOADING)}:f")
    assert [r.status for r in run.results] == [E] * 6
    for result in run.results:
        why = result.reason or ""
        assert not why.startswith("not run"), why
        assert why.startswith(
            ("the runner lost this case", "the runner could not start this case")
        ), why


# The first case crashes the worker; the worker started after it cannot import the
# implementation (the second import of three fails), the one after that can.
SECOND_IMPORT_FAILS = """
import os

COUNT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "imports")
with open(COUNT, "a") as handle:
    handle.write("x")
with open(COUNT) as handle:
    if len(handle.read()) == 2:
        raise RuntimeError("the second import fails")

def f(n):
    if n == 1:
        os._exit(9)
    return n
"""


def test_a_restarted_worker_that_cannot_load_again_is_tried_again(module: Module) -> None:
    module.suite(numbered_suite(3))
    # Without the sandbox: the implementation counts its imports beside its file.
    run = module.run(f"{module.impl(SECOND_IMPORT_FAILS)}:f", isolation="none", sandbox="off")
    assert [r.status for r in run.results] == [E, P, P], [r.reason for r in run.results]
    assert any("could not load the implementation again" in note for note in run.notes)

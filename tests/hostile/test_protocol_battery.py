"""The protocol battery: an implementation's side that lies about what the runner saw.

Everything on the implementation's side (the worker once it imported the
implementation, every case's process, a harness, a per-case command) is untrusted: what
it says is data. Each test here is a hostile implementation of one class of docs/trust.md
("What the runner observes itself"): a rejection that is not the implementation's own
refusal (class 1), a message that speaks for another case or for the runner (class 2),
and ``--isolation none`` keeping its promises (class 7), plus the runner-observed facts
(time, hangs, crashes, measurements). Each asserts exact statuses and a reason fragment,
and that no case passes that should not.
"""

from __future__ import annotations

import shlex
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from cer import sandbox
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.sandbox import memory_cgroup
from cer.suite.loader import load_suite
from support import Module

PASS, FAIL, ERRORED = Status.PASS, Status.FAIL, Status.ERRORED
MODES = ["fork", "none"]
PYTHON = shlex.quote(sys.executable)


def suite(*cases: tuple[str, str, str]) -> str:
    """A suite of (name, input, expect) cases, inline tables as TOML text."""
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for name, input_, expect in cases:
        parts.append(
            f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
            f"input = {input_}\nexpect = {expect}\n"
        )
    return "\n".join(parts)


def run(module: Module, source: str, suite_text: str, **options: Any) -> tuple[RunResult, float]:
    module.suite(suite_text)
    name = module.impl(textwrap.dedent(source))
    options.setdefault("timeout", 2.0)
    started = time.monotonic()
    result = module.run(f"{name}:f", **options)
    return result, time.monotonic() - started


def outcome(result: RunResult) -> list[tuple[Status, str]]:
    return [(r.status, r.reason or "") for r in result.results]


# --- class 1: a rejection is only the implementation's own refusal -----------------------


@pytest.mark.parametrize("isolation", MODES)
def test_a_function_that_cannot_take_the_input_is_errored_not_a_rejection(
    module: Module, isolation: str
) -> None:
    result, _ = run(
        module,
        "def f():\n    return 1\n",
        suite(("a", "{ x = 1 }", "{ rejects = true }"), ("b", "{}", "{ output = 1 }")),
        isolation=isolation,
    )
    (status, why), after = outcome(result)
    assert status is ERRORED
    assert "the input does not fit the signature of f: unexpected `x`" in why
    assert after == (PASS, "")


def test_a_run_case_that_cannot_take_the_case_is_errored(module: Module) -> None:
    source = "class f:\n    def run_case(self):\n        return 1\n"
    result, _ = run(module, source, suite(("a", "{}", "{ rejects = true }")))
    ((status, why),) = outcome(result)
    assert status is ERRORED
    assert "cannot call f.run_case with the case's input" in why


HOOK_AFTER_RETURN = """
import sys

def f(x):
    def hook(frame, event, arg):
        if frame.f_globals.get("__name__") != __name__:
            raise RuntimeError("raised by a hook in the runner's frames")
    sys.setprofile(hook)
    return x
"""


@pytest.mark.parametrize("isolation", MODES)
def test_a_hook_raising_after_the_return_is_errored_not_a_rejection(
    module: Module, isolation: str
) -> None:
    result, _ = run(
        module,
        HOOK_AFTER_RETURN,
        suite(("a", "{ x = 1 }", "{ rejects = true }")),
        isolation=isolation,
    )
    ((status, why),) = outcome(result)
    assert status is ERRORED
    assert "the implementation returned, then RuntimeError was raised outside it" in why


ENCODING_FAILS = """
import inspect
import sys

def f(x):
    sys.setrecursionlimit(len(inspect.stack()) + 12)
    return {"output": [[[[[[[[[[[[[[[[[[[[x]]]]]]]]]]]]]]]]]]]]}
"""


def test_a_result_the_runner_cannot_encode_is_errored_not_a_rejection(module: Module) -> None:
    result, _ = run(module, ENCODING_FAILS, suite(("a", "{ x = 1 }", "{ rejects = true }")))
    ((status, why),) = outcome(result)
    assert status is ERRORED
    assert why.startswith(
        ("the runner could not encode", "the implementation returned, then RecursionError")
    ), why


def test_encoding_failures_are_the_runners_not_the_implementations() -> None:
    from cer.judge.verdict import outcome_from_worker
    from cer.worker.call import _encode_returned

    class Changing(Exception):
        pass

    def to_wire(value: Any) -> Any:
        raise RuntimeError("dictionary changed size during iteration")

    payload = _encode_returned({"a": 1}, to_wire, Changing)
    assert payload == {
        "k": "encode",
        "msg": "RuntimeError: dictionary changed size during iteration",
    }
    from cer.wire import plaindata

    result = outcome_from_worker(
        {"op": "result", "exit": {"how": "inline"}}, plaindata.dumps(payload), 1.0, 100, 3.0
    )
    assert result.kind == "lost"
    assert "could not encode what the implementation returned: RuntimeError" in result.detail


PER_CASE_SYNTAX_ERROR = "def broken(:\n"


@pytest.mark.parametrize(
    ("command", "evidence"),
    [
        ("false", "exited with status 1 without an error document"),
        (f"{PYTHON} /nonexistent/cer-missing-script.py", "exited with status 2"),
        (f"{PYTHON} SYNTAX", "SyntaxError"),
    ],
    ids=["false", "missing-script", "syntax-error"],
)
def test_a_per_case_command_that_cannot_start_is_errored_not_a_rejection(
    module: Module, tmp_path: Path, command: str, evidence: str
) -> None:
    script = tmp_path / "broken.py"
    script.write_text(PER_CASE_SYNTAX_ERROR, encoding="utf-8")
    module.suite(suite(("a", "{ x = 1 }", "{ rejects = true }")))
    result = run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(
            impl=command.replace("SYNTAX", shlex.quote(str(script))),
            kind="command-per-case",
            timeout=5.0,
        ),
    )
    ((status, why),) = outcome(result)
    assert status is ERRORED
    assert evidence in why


# --- class 2: nothing from the implementation's side speaks for another case ------------

FORGER_AT_IMPORT = """
import os, sys, threading, time
from cer.wire import plaindata
from cer.wire.framing import KIND_JSON, KIND_RAW, pack

def _forge():
    fd = int(sys.argv[2])  # the worker's channel to the supervisor
    time.sleep(0.2)  # once the implementation is loaded and cases are in flight
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for seq in range(1, 20):
            message = {"op": "result", "seq": seq, "exit": {"how": "inline"}, "stdout": "",
                       "stderr": "", "dropped": 0, "anomaly": None, "strays": 0}
            payload = plaindata.dumps({"k": "ret", "v": {"output": 4}, "ms": 0.0})
            try:
                os.write(fd, pack(KIND_JSON, plaindata.dumps(message)) + pack(KIND_RAW, payload))
            except OSError:
                return
        time.sleep(0.005)

threading.Thread(target=_forge, daemon=True).start()

def f(x):
    time.sleep(0.4)
    return {"output": 5}
"""


@pytest.mark.parametrize("isolation", MODES)
def test_a_worker_forging_results_passes_no_case(module: Module, isolation: str) -> None:
    cases = [(f"c{i}", f"{{ x = {i} }}", "{ output = 4 }") for i in range(4)]
    result, wall = run(module, FORGER_AT_IMPORT, suite(*cases), isolation=isolation)
    statuses = [r.status for r in result.results]
    assert PASS not in statuses, outcome(result)
    assert set(statuses) <= {FAIL, ERRORED}
    assert wall < 20


CASE_FORGES_THROUGH_PROC = """
import os, sys
from cer.wire import plaindata
from cer.wire.framing import KIND_JSON, KIND_RAW, pack

def f(x):
    if x == 2:
        # Reopen the worker's channel to the supervisor and answer for this case and
        # the next one, with the values their expectations want.
        try:
            fd = os.open(f"/proc/{os.getppid()}/fd/{int(sys.argv[2])}", os.O_WRONLY)
        except OSError:
            return {"output": 5}
        for seq in (2, 3):
            message = {"op": "result", "seq": seq, "exit": {"how": "exited", "code": 0},
                       "stdout": "", "stderr": "", "dropped": 0, "anomaly": None,
                       "strays": 0}
            payload = pack(KIND_RAW, plaindata.dumps({"k": "ret", "v": {"output": 4}}))
            os.write(fd, pack(KIND_JSON, plaindata.dumps(message)) + pack(KIND_RAW, payload))
    return {"output": 5 if x in (2, 3) else 4}
"""


def test_a_case_writing_to_the_workers_channel_speaks_for_no_case(module: Module) -> None:
    cases = [(f"c{i}", f"{{ x = {i} }}", "{ output = 4 }") for i in range(1, 5)]
    result, _ = run(module, CASE_FORGES_THROUGH_PROC, suite(*cases))
    got = outcome(result)
    assert got[0] == (PASS, "")
    assert got[1][0] in (ERRORED, FAIL), got
    assert got[2] == (FAIL, "output: expected int 4, observed int 5")
    assert got[3] == (PASS, "")


BEGIN_FLOOD = """
import os, sys, threading, time
from cer.wire import plaindata
from cer.wire.framing import KIND_JSON, pack

def f():
    fd = int(sys.argv[2])
    def flood():
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            try:
                os.write(fd, pack(KIND_JSON, plaindata.dumps({"op": "begin", "seq": 1})))
            except OSError:
                return
            time.sleep(0.05)
    threading.Thread(target=flood, daemon=True).start()
    time.sleep(30)
"""


def test_messages_from_the_worker_never_move_a_deadline(module: Module) -> None:
    result, wall = run(
        module,
        BEGIN_FLOOD,
        suite(("a", "{}", "{ output = 1 }"), ("b", "{}", "{ hung = true }")),
        isolation="none",
        timeout=0.5,
    )
    (status, why), _ = outcome(result)
    assert status is ERRORED
    assert "answers no case in flight" in why or "timed out after 0.5 s" in why
    assert wall < 4, f"the run took {wall:.1f} s"


LYING_CLOCK_AT_IMPORT = """
import sys, time
sys.modules["cer.worker.main"]._monotonic = lambda: 0.0

def f():
    time.sleep(0.3)
    return 1
"""


def test_a_worker_with_a_stopped_clock_gets_the_supervisors_time(module: Module) -> None:
    result, _ = run(
        module, LYING_CLOCK_AT_IMPORT, suite(("a", "{}", "{ output = 1, elapsed_ms_max = 100 }"))
    )
    ((status, why),) = outcome(result)
    assert status is FAIL
    assert "elapsed_ms_max: expected elapsed_ms <= 100, observed 3" in why
    assert result.results[0].elapsed_ms is not None and result.results[0].elapsed_ms >= 300


LYING_ENDING_AT_IMPORT = """
import sys
worker = sys.modules["cer.worker.main"]

def _lie(self, child):
    self.send({"op": "result", "seq": self._case_seq, "exit": ENDING, "stdout": "",
               "stderr": "", "dropped": 0, "anomaly": None, "strays": 0}, b"S")
    child.discard()

worker.Worker._supervise_child = _lie

def f():
    return 1
"""


@pytest.mark.parametrize(
    ("ending", "expect", "evidence"),
    [
        ('{"how": "timeout"}', "{ hung = true }", "the worker reported a timeout after"),
        (
            '{"how": "signal", "signal": 11, "name": "SIGSEGV"}',
            "{ crashed = false, hung = false }",
            "crashed: expected bool False, observed bool True",
        ),
    ],
    ids=["timeout", "crash"],
)
def test_a_worker_claiming_a_hang_or_a_crash_is_not_believed(
    module: Module, ending: str, expect: str, evidence: str
) -> None:
    source = LYING_ENDING_AT_IMPORT.replace("ENDING", ending)
    result, _ = run(module, source, suite(("a", "{}", expect)), timeout=1.0)
    ((status, why),) = outcome(result)
    assert status is (ERRORED if "timeout" in ending else FAIL)
    assert evidence in why


LYING_INLINE_CRASH_AT_IMPORT = """
import sys
worker = sys.modules["cer.worker.main"]

def _lie(self, seq, message):
    self.send({"op": "result", "seq": seq, "exit": {"how": "signal", "signal": 11,
               "name": "SIGSEGV"}, "stdout": "", "stderr": "", "dropped": 0,
               "anomaly": None}, b"")

worker.Worker._run_inline = _lie

def f():
    return 1
"""


@pytest.mark.parametrize("isolation", MODES)
def test_a_crash_only_the_worker_reports_cannot_satisfy_crashed_true(
    module: Module, isolation: str
) -> None:
    result, _ = run(
        module,
        LYING_INLINE_CRASH_AT_IMPORT,
        suite(("a", "{}", "{ crashed = true }")),
        isolation=isolation,
    )
    ((status, why),) = outcome(result)
    assert status is ERRORED
    assert why.startswith(
        "could not verify crashed = true: the case's process was killed by SIGSEGV"
    )


REAL_CRASHES = """
import os, signal, sys

def f(how):
    if how == "exit":
        os._exit(3)
    if how == "signal":
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "system-exit":
        raise SystemExit(4)
    return 1
"""


@pytest.mark.parametrize("isolation", MODES)
def test_a_real_crash_satisfies_crashed_true_in_every_mode(module: Module, isolation: str) -> None:
    cases = [
        (how, f'{{ how = "{how}" }}', "{ crashed = true }")
        for how in ("exit", "signal", "system-exit", "none")
    ]
    result, _ = run(module, REAL_CRASHES, suite(*cases), isolation=isolation)
    got = outcome(result)
    assert [status for status, _ in got] == [PASS, PASS, PASS, FAIL], got
    assert "crashed: expected bool True, observed bool False" in got[3][1]


PRE_ANSWERING_HARNESS = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        print(json.dumps({"op": "started", "protocol": 1,
                          "implementation": {"name": "h", "version": "1"}}), flush=True)
    elif message["op"] == "run":
        seq = message["seq"]
        if message["case"]["name"] == "a":
            one = {"type": "integer", "value": "1"}
            print(json.dumps({"op": "result", "seq": seq, "observation": one}), flush=True)
            # the answer to the next request, before it was asked
            print(json.dumps({"op": "result", "seq": seq + 1, "observation": one}), flush=True)
        # the request it already answered is never answered again
    else:
        break
"""


def test_a_harness_cannot_answer_a_request_before_it_is_sent(
    module: Module, tmp_path: Path
) -> None:
    script = tmp_path / "harness.py"
    script.write_text(PRE_ANSWERING_HARNESS, encoding="utf-8")
    module.suite(suite(("a", "{}", "{ output = 1 }"), ("b", "{}", "{ output = 1 }")))
    result = run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(impl=f"{PYTHON} {shlex.quote(str(script))}", kind="command", timeout=5.0),
    )
    statuses = [r.status for r in result.results]
    assert statuses[1] is not PASS, outcome(result)
    assert "seq" in (result.results[1].reason or "")


# --- measurements ---------------------------------------------------------------------


def test_a_measurement_the_runner_does_not_make_is_not_taken_from_the_implementation(
    module: Module,
) -> None:
    source = "def f():\n    return {'output': 4, 'first_render_ms': 1, 'binary_size_mb': 1}\n"
    result, _ = run(
        module,
        source,
        suite(
            ("a", "{}", "{ first_render_ms_max = 100 }"),
            ("b", "{}", "{ output = 4, binary_size_mb_max = 5 }"),
        ),
    )
    got = outcome(result)
    assert got[0][0] is ERRORED and got[0][1].startswith(
        "could not verify first_render_ms_max: the runner does not measure first_render_ms"
    )
    assert got[1][0] is ERRORED and got[1][1].startswith("could not verify binary_size_mb")


MEMORY = """
import subprocess

def f(mb, lie=False):
    if mb < 0:
        subprocess.run(["true"])
    block = bytearray(mb * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    return {"output": 4, "resident_memory_mb": 1} if lie else {"output": 4}
"""


@pytest.mark.skipif(
    not sandbox.status().available,
    reason="memory is measured only under the sandbox (tests/hostile/test_red_team.py)",
)
@pytest.mark.parametrize("isolation", MODES)
def test_resident_memory_is_the_kernels_account_never_the_implementations(
    module: Module, isolation: str
) -> None:
    result, _ = run(
        module,
        MEMORY,
        suite(
            ("small", "{ mb = 1 }", "{ output = 4, resident_memory_mb_max = 100 }"),
            ("large", "{ mb = 150 }", "{ output = 4, resident_memory_mb_max = 100 }"),
            ("starts-a-process", "{ mb = -1 }", "{ output = 4, resident_memory_mb_max = 100 }"),
            ("plain", "{ mb = 1 }", "{ output = 4 }"),
            ("lies", "{ mb = 150, lie = true }", "{ output = 4, resident_memory_mb_max = 100 }"),
        ),
        isolation=isolation,
    )
    got = outcome(result)
    assert got[0] == (PASS, "")
    assert 1 < result.results[0].observation["resident_memory_mb"] < 100
    assert got[1][0] is FAIL
    assert "resident_memory_mb_max: expected resident_memory_mb <= 100, observed 1" in got[1][1]
    assert result.results[1].observation["resident_memory_mb"] > 150
    # Where no memory cgroup counts the case, pipes and sockets are forbidden too.
    buffers = (
        ""
        if isinstance(memory_cgroup.locate(), memory_cgroup.Controller)
        else ", or to make a pipe or socket, whose kernel buffers only a memory cgroup "
        "counts (none could be made here)"
    )
    assert got[2] == (
        ERRORED,
        "could not verify resident_memory_mb: the case tried to start a process, or to "
        "open a network socket or io_uring, or to reach another process through a Unix "
        f"socket{buffers} (killed by SIGSYS), and a case whose memory is measured runs "
        "alone in one process that keeps its data to itself",
    )
    assert got[3] == (PASS, "")
    assert got[4][0] is ERRORED
    assert "the implementation reported `resident_memory_mb`, which only the runner" in got[4][1]


def test_a_commands_memory_is_not_measured(module: Module) -> None:
    module.suite(suite(("a", "{}", "{ resident_memory_mb_max = 100 }")))
    result = run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(impl="true", kind="command-per-case", timeout=5.0),
    )
    ((status, why),) = outcome(result)
    assert status is ERRORED
    assert why.startswith("could not verify resident_memory_mb: the runner measures it only")


# --- class 7: --isolation none keeps its promises ----------------------------------------

CRASH_WHILE_A_CHILD_HOLDS_THE_PIPE = """
import os, signal, time

def f(x):
    if x == 2:
        return 4
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_crash_of_the_worker_is_seen_even_while_a_child_holds_its_channel(
    module: Module,
) -> None:
    result, wall = run(
        module,
        CRASH_WHILE_A_CHILD_HOLDS_THE_PIPE,
        suite(("a", "{ x = 1 }", "{ crashed = true }"), ("b", "{ x = 2 }", "{ output = 4 }")),
        isolation="none",
        timeout=5.0,
    )
    (first, why), (second, _) = outcome(result)
    assert first is PASS, why
    assert result.results[0].observation["crashed"] is True
    assert second is PASS  # on a new worker
    assert wall < 4, f"the run took {wall:.1f} s"


REBINDS_HELPERS = """
import json, operator, os, sys

_REAL_DUMPS = json.dumps
_ORIGINAL_FIRST = sys.path[0]

def f(x):
    if x == 2:
        def dumps(obj, *args, **kwargs):
            return _REAL_DUMPS(obj, *args, **kwargs).replace('"output":5', '"output":4')
        json.dumps = dumps
        operator.is_ = lambda a, b: True
        sys.path[0] = "/elsewhere"
        return {"output": 5}
    return {"output": 4, "clean": sys.path[0] == _ORIGINAL_FIRST}
"""


@pytest.mark.parametrize("isolation", MODES)
def test_rebinding_the_runners_helpers_changes_neither_the_result_nor_the_checks(
    module: Module, isolation: str
) -> None:
    result, _ = run(
        module,
        REBINDS_HELPERS,
        suite(
            ("a", "{ x = 1 }", "{ output = 4, clean = true }"),
            ("b", "{ x = 2 }", "{ output = 4 }"),
            ("c", "{ x = 3 }", "{ output = 4, clean = true }"),
        ),
        isolation=isolation,
    )
    got = outcome(result)
    assert got[0] == (PASS, "")
    assert got[1] == (FAIL, "output: expected int 4, observed int 5")
    assert got[2] == (PASS, "")

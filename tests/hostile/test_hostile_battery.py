"""The hostile battery: implementations that try to break or fool the runner.

Every behaviour runs as the middle case of a three-case suite. The first and last cases
are honest, and each of them also checks that it sees a clean process (working
directory, environment, ``sys.path``, builtins, threads, signal handlers, its own input)
so that "the next case is unaffected" is verified, not assumed. Each test asserts the
exact status of every case, a reason fragment for the hostile one, and that the run
finished within the timeout plus a small grace. docs/trust.md lists the battery.

Behaviours already covered in tests/engine/test_runner.py (sys.exit(0), os._exit(0), SIGKILL,
a segfault, KeyboardInterrupt, GeneratorExit, an infinite loop, printing PASS) are not
repeated here.
"""

from __future__ import annotations

import textwrap
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from cer.model import RunResult, Status
from support import Module

PASS, FAIL, ERRORED = Status.PASS, Status.FAIL, Status.ERRORED

GRACE = 4.0
"""Seconds a run may take beyond its cases' timeouts (worker start, restarts, forks)."""

SUITE = """
commonsformat_evals = "0.2"
target = "hostile"

[[adversarial]]
name = "a-first"
category = "input-validation"
input = {{ x = 1, items = ["a", "b"] }}
expect = {{ output = 2, clean = true }}

[[cases]]
name = "b-hostile"
category = "functional"
input = {{ x = 2, items = ["a", "b"] }}
expect = {second}

[[cases]]
name = "c-next"
category = "functional"
input = {{ x = 3, items = ["a", "b"] }}
expect = {{ output = 6, clean = true }}
"""

IMPL = '''
import builtins
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


def _state():
    """What a fresh case's process looks like; a case left behind by another differs."""
    handlers = []
    for number in (signal.SIGALRM, signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
        handlers.append(repr(signal.getsignal(number)))
    return (
        os.getcwd(),
        # Each case gets a scratch folder of its own, which these name.
        sorted(item for item in os.environ.items() if item[0] not in ("TMPDIR", "TEMP", "TMP")),
        list(sys.path),
        sorted((name, id(value)) for name, value in vars(builtins).items()),
        threading.active_count(),
        handlers,
        signal.getitimer(signal.ITIMER_REAL),
        sys.getrecursionlimit(),
        sys.gettrace(),
        sys.getprofile(),
    )


BASE = _state()


def honest(x, items):
    print(f"case {{x}}")
    return {{"output": x * 2, "clean": _state() == BASE and items == ["a", "b"]}}


def f(x, items):
    if x == 2:
{body}
    return honest(x, items)
'''


@dataclass(frozen=True)
class Hostile:
    """One hostile behaviour and what the runner must report for it."""

    body: str
    status: Status | dict[str, Status]
    """The hostile case's status, or one per isolation mode."""
    reason: str | None = None
    """A fragment the hostile case's reason must hold (None: the reason must be empty)."""
    expect: str = "{ output = 4, clean = true }"
    timeout: float = 2.0
    isolations: tuple[str, ...] = ("fork", "none")
    options: dict[str, Any] = field(default_factory=dict)

    def status_for(self, isolation: str) -> Status:
        if isinstance(self.status, dict):
            return self.status[isolation]
        return self.status


GIB = 1024**3
HOSTILE: dict[str, Hostile] = {
    # --- resources ---------------------------------------------------------------------
    "deep-recursion": Hostile(
        "def down(n):\n    return down(n + 1)\nreturn down(0)",
        ERRORED,
        "RecursionError",
    ),
    "deep-c-recursion": Hostile(
        "sys.setrecursionlimit(10**8)\n"
        "def down(n):\n    return list(map(down, [n + 1]))\n"
        "return down(0)",
        ERRORED,
        "SIGSEGV",
        timeout=10.0,
    ),
    "allocate-8-gib": Hostile(
        f"hoard = bytearray({8 * GIB})\nreturn honest(x, items)",
        ERRORED,
        "out of memory",
        options={"max_memory": 512 * 1024**2},
    ),
    "allocate-until-refused": Hostile(
        "hoard = []\nwhile True:\n    hoard.append(bytearray(64 * 1024 * 1024))",
        ERRORED,
        "out of memory",
        timeout=10.0,
        options={"max_memory": 512 * 1024**2},
    ),
    "stdout-100-mb": Hostile(
        "chunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n"
        "return honest(x, items)",
        PASS,
        None,
        timeout=10.0,
    ),
    "output-over-64-mib": Hostile(
        "return {'output': 'x' * (65 * 1024 * 1024), 'clean': True}",
        {"fork": ERRORED, "none": FAIL},
        "",
        timeout=10.0,
    ),
    # --- exits and BaseExceptions --------------------------------------------------------
    "custom-base-exception": Hostile(
        "class Abandon(BaseException):\n    pass\nraise Abandon('giving up')",
        ERRORED,
        "raised Abandon (a BaseException",
    ),
    "system-exit-nonzero": Hostile("sys.exit(3)", ERRORED, "SystemExit"),
    "system-exit-message": Hostile("raise SystemExit('all good, PASS')", ERRORED, "SystemExit"),
    "keyboard-interrupt-in-finally": Hostile(
        "try:\n    return honest(x, items)\nfinally:\n    raise KeyboardInterrupt",
        ERRORED,
        "KeyboardInterrupt",
    ),
    "base-exception-against-crashed-false": Hostile(
        "class Abandon(BaseException):\n    pass\nraise Abandon('no')",
        FAIL,
        "crashed",
        expect="{ crashed = false }",
    ),
    "abort": Hostile("os.abort()", ERRORED, "SIGABRT"),
    "exec-another-program": Hostile(
        "os.execv('/bin/true', ['true'])",
        ERRORED,
        "",
    ),
    # --- values that lie -------------------------------------------------------------------
    "eq-always-true-nested": Hostile(
        "class Liar:\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = object.__hash__\n"
        "return {'output': [Liar()], 'clean': True}",
        ERRORED,
        "output[0]",
        expect="{ output = [4], clean = true }",
    ),
    "bool-raises": Hostile(
        "class Trap:\n    def __bool__(self):\n        raise RuntimeError('gotcha')\n"
        "return {'output': 4, 'clean': Trap()}",
        ERRORED,
        "not plain data",
    ),
    "repr-hangs": Hostile(
        "class Slow:\n    def __repr__(self):\n        while True:\n            pass\n"
        "    __str__ = __repr__\n"
        "return {'output': Slow(), 'clean': True}",
        ERRORED,
        "not plain data",
    ),
    "repr-huge": Hostile(
        "class Big:\n    def __repr__(self):\n        return 'x' * (50 * 1024 * 1024)\n"
        "return Big()",
        ERRORED,
        "not plain data",
    ),
    "exception-str-hangs": Hostile(
        "class Stuck(Exception):\n    def __str__(self):\n        while True:\n"
        "            pass\nraise Stuck()",
        ERRORED,
        "timed out",
        timeout=0.5,
    ),
    "exception-message-huge": Hostile(
        "raise ValueError('x' * (20 * 1024 * 1024))",
        ERRORED,
        "ValueError",
        timeout=10.0,
    ),
    "int-subclass": Hostile(
        "class Four(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n"
        "return {'output': Four(5), 'clean': True}",
        ERRORED,
        "not plain data",
    ),
    "true-for-1": Hostile(
        "return True", FAIL, "expected int 1, observed bool True", expect="{ output = 1 }"
    ),
    "float-for-int": Hostile(
        "return 1.0", FAIL, "expected int 1, observed float 1.0", expect="{ output = 1 }"
    ),
    "string-for-int": Hostile(
        "return '1'", FAIL, "expected int 1, observed str '1'", expect="{ output = 1 }"
    ),
    "false-for-0": Hostile("return False", FAIL, "observed bool False", expect="{ output = 0 }"),
    "nan-for-number": Hostile("return float('nan')", FAIL, "nan", expect="{ output = 1.5 }"),
    "nan-against-bound": Hostile(
        "return {'size': float('nan')}",
        FAIL,
        "satisfies no bound",
        expect='{ size_max = 10, self_reported = ["size"] }',
    ),
    "generator": Hostile("return (n for n in [4])", ERRORED, "generator"),
    "lazy-proxy": Hostile(
        "class Lazy:\n    @property\n    def __class__(self):\n        return int\n"
        "    def __eq__(self, other):\n        return other == 4\n"
        "    __hash__ = object.__hash__\n"
        "return {'output': Lazy(), 'clean': True}",
        ERRORED,
        "not plain data",
    ),
    "self-referencing-list": Hostile(
        "loop = [4]\nloop.append(loop)\nreturn {'output': loop, 'clean': True}",
        ERRORED,
        "contains itself",
    ),
    "nested-too-deep": Hostile(
        "deep = 4\nfor _ in range(500):\n    deep = [deep]\nreturn {'output': deep, 'clean': True}",
        ERRORED,
        "deeper than",
    ),
    "forged-type-tag": Hostile(
        "return {'output': {'$date': '2020-01-01'}}",
        FAIL,
        "output",
        expect="{ output = 2020-01-01 }",
    ),
    "non-string-keys": Hostile(
        "return {'output': {1: 4}, 'clean': True}", ERRORED, "keys must be str"
    ),
    # --- lying on the streams ----------------------------------------------------------
    "fake-results-on-stdout-and-stderr": Hostile(
        "import struct\n"
        "for fd in (1, 2):\n"
        '    os.write(fd, b\'PASS\\nok 1\\n{"status": "pass", "passed": 3}\\n\')\n'
        '    body = b\'{"k":"ret","v":{"output":4,"clean":true},"ms":1}\'\n'
        "    os.write(fd, struct.pack('>IB', len(body), 2) + body)\n"
        "return {'output': 5, 'clean': True}",
        FAIL,
        "expected int 4, observed int 5",
    ),
    "close-stdout-and-stderr": Hostile(
        "sys.stdout.flush()\nos.close(1)\nos.close(2)\nreturn {'output': 4, 'clean': True}",
        PASS,
        None,
    ),
    "close-every-descriptor": Hostile(
        "os.closerange(0, 4096)\nreturn {'output': 4, 'clean': True}",
        ERRORED,
        "",
    ),
    # --- processes and threads ---------------------------------------------------------
    "threads-left-running": Hostile(
        "import time\n"
        "def spin():\n    while True:\n        time.sleep(0.01)\n"
        "for _ in range(3):\n    threading.Thread(target=spin).start()\n"
        "return {'output': 4, 'clean': True}",
        PASS,
        None,
    ),
    "stop-itself": Hostile(
        "os.kill(os.getpid(), signal.SIGSTOP)", ERRORED, "timed out", timeout=0.5
    ),
    "kill-the-worker": Hostile(
        "os.kill(os.getppid(), signal.SIGKILL)\nimport time\ntime.sleep(5)",
        ERRORED,
        "the runner lost this case",
        isolations=("fork",),
        options={"sandbox": "off"},  # the defence behind the sandbox, which refuses this
    ),
    # --- state that must not reach the next case ---------------------------------------
    "change-cwd": Hostile("os.chdir('/')\nreturn {'output': 4, 'clean': True}", PASS, None),
    "change-environment": Hostile(
        "os.environ['HOSTILE'] = '1'\nos.environ.pop('PATH', None)\n"
        "return {'output': 4, 'clean': True}",
        PASS,
        None,
    ),
    "change-sys-path": Hostile(
        "sys.path.insert(0, '/nonexistent')\nsys.path.pop()\nreturn {'output': 4, 'clean': True}",
        PASS,
        None,
    ),
    "mutate-input": Hostile(
        "items.clear()\nitems.append('mutated')\nreturn honest(x, ['a', 'b'])",
        PASS,
        None,
    ),
    "alarm-left-armed": Hostile(
        "def boom(*args):\n    raise RuntimeError('alarm from the previous case')\n"
        "signal.signal(signal.SIGALRM, boom)\nsignal.setitimer(signal.ITIMER_REAL, 0.3)\n"
        "return {'output': 4, 'clean': True}",
        PASS,
        None,
    ),
    "recursion-limit-lowered": Hostile(
        "sys.setrecursionlimit(60)\nreturn {'output': 4, 'clean': True}",
        PASS,
        None,
    ),
    "tracer-left-installed": Hostile(
        "def tracer(*args):\n    return None\n"
        "sys.settrace(tracer)\nsys.setprofile(tracer)\nreturn {'output': 4, 'clean': True}",
        PASS,
        None,
    ),
    "tracer-that-raises": Hostile(
        "def tracer(*args):\n    raise RuntimeError('traced')\n"
        "sys.setprofile(tracer)\nreturn {'output': 4, 'clean': True}",
        ERRORED,
        "",
    ),
    "monkeypatch-cer": Hostile(
        "import cer.judge.compare, cer.judge.equality, cer.judge.verdict\n"
        "import cer.model, cer.wire.plaindata\n"
        "cer.judge.compare.compare = lambda expect, observation: ()\n"
        "cer.judge.equality.values_equal = lambda a, b: True\n"
        "cer.judge.verdict.judge = lambda case, outcome: None\n"
        "cer.model.Summary.of = classmethod(lambda cls, results: None)\n"
        "real = cer.wire.plaindata.to_wire\n"
        "cer.wire.plaindata.to_wire = lambda value, path='': real({'output': 4, 'clean': True})\n"
        'cer.wire.plaindata.dumps = lambda message: b\'{"k": "ret", "v": 4}\'\n'
        "return {'output': 5, 'clean': True}",
        FAIL,
        "expected int 4, observed int 5",
    ),
    "monkeypatch-builtins": Hostile(
        "builtins.isinstance = lambda obj, cls: True\n"
        "builtins.type = lambda *args: dict\n"
        "builtins.len = lambda obj: 0\n"
        "return {'output': 5, 'clean': True}",
        FAIL,
        "expected int 4, observed int 5",
    ),
    # --- the runner's own channels and files -------------------------------------------
    "garbage-to-every-descriptor": Hostile(
        "for name in os.listdir('/proc/self/fd'):\n"
        "    try:\n        os.write(int(name), b'\\xff' * 64 + b'PASS')\n"
        "    except OSError:\n        pass\n"
        "return {'output': 4, 'clean': True}",
        ERRORED,
        "",
    ),
    "garbage-to-the-workers-descriptors": Hostile(
        "parent = os.getppid()\n"
        "for name in os.listdir(f'/proc/{parent}/fd'):\n"
        "    try:\n"
        "        fd = os.open(f'/proc/{parent}/fd/{name}', os.O_WRONLY | os.O_NONBLOCK)\n"
        "        os.write(fd, b'\\xff' * 64)\n"
        "    except OSError:\n        pass\n"
        "return {'output': 4, 'clean': True}",
        ERRORED,
        "",
        isolations=("fork",),
        options={"sandbox": "off"},  # the defence behind the sandbox, which refuses this
    ),
    "rewrite-the-suite-file": Hostile(
        "path = os.path.join(HERE, 'evals.toml')\n"
        "text = open(path).read().replace('output = 4', 'output = 5')\n"
        "text = text.replace('output = 6', 'output = 7')\n"
        "open(path, 'w').write(text)\n"
        "return {'output': 5, 'clean': True}",
        FAIL,
        "expected int 4, observed int 5",
        options={"sandbox": "off"},  # the defence behind the sandbox, which refuses this
    ),
    # --- time ----------------------------------------------------------------------------
    "sleep-past-timeout-ignoring-sigterm": Hostile(
        "import time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(30)",
        ERRORED,
        "timed out after 0.5 s",
        timeout=0.5,
    ),
    "sleep-in-finally": Hostile(
        "import time\ntry:\n    return honest(x, items)\nfinally:\n    time.sleep(30)",
        ERRORED,
        "timed out after 0.5 s",
        timeout=0.5,
    ),
    "swallow-every-exception-and-loop": Hostile(
        "import time\nwhile True:\n    try:\n        time.sleep(10)\n"
        "    except BaseException:\n        pass",
        ERRORED,
        "timed out",
        timeout=0.5,
    ),
    "sleep-against-hung-false": Hostile(
        "import time\ntime.sleep(30)",
        FAIL,
        "timed out",
        expect="{ hung = false }",
        timeout=0.5,
    ),
    "fake-elapsed-ms": Hostile(
        "import time\ntime.sleep(0.3)\nreturn {'output': 4, 'elapsed_ms': 1}",
        ERRORED,
        "the implementation reported `elapsed_ms`, which only the runner observes",
        expect="{ output = 4, elapsed_ms_max = 100 }",
    ),
    "patch-the-clock": Hostile(
        "import time\ntime.sleep(0.3)\ntime.perf_counter = lambda: 0.0\n"
        "time.monotonic = lambda: 0.0\nreturn {'output': 4}",
        FAIL,
        "elapsed_ms_max",
        expect="{ output = 4, elapsed_ms_max = 100 }",
    ),
}


def _impl_source(body: str) -> str:
    return IMPL.format(body=textwrap.indent(body, " " * 8))


def run_hostile(module: Module, hostile: Hostile, isolation: str) -> tuple[RunResult, float]:
    module.suite(SUITE.format(second=hostile.expect))
    name = module.impl(_impl_source(hostile.body))
    started = time.monotonic()
    run = module.run(f"{name}:f", timeout=hostile.timeout, isolation=isolation, **hostile.options)
    return run, time.monotonic() - started


def check(run: RunResult, wall: float, hostile: Hostile, isolation: str) -> None:
    """Every case reported, in order; the honest ones pass; the hostile one has its
    exact status and reason; the run took no longer than its timeouts allow."""
    assert [r.case_name for r in run.results] == ["a-first", "b-hostile", "c-next"]
    got = [r.status for r in run.results]
    assert got == [PASS, hostile.status_for(isolation), PASS], [
        (r.case_name, r.status.value, r.reason, r.stderr[-300:]) for r in run.results
    ]
    reason = run.results[1].reason
    if hostile.reason is None:
        assert reason is None
    else:
        assert reason and hostile.reason in reason, reason
        assert len(reason) < 4000
    assert run.results[2].stdout.startswith("case 3\n")
    assert wall < 3 * hostile.timeout + GRACE, f"the run took {wall:.1f} s"


CASES = [
    pytest.param(name, isolation, id=f"{name}-{isolation}")
    for name, hostile in HOSTILE.items()
    for isolation in hostile.isolations
]


@pytest.mark.parametrize(("name", "isolation"), CASES)
def test_hostile(module: Module, name: str, isolation: str) -> None:
    hostile = HOSTILE[name]
    run, wall = run_hostile(module, hostile, isolation)
    check(run, wall, hostile, isolation)


def test_the_battery_is_large_enough() -> None:
    assert len(HOSTILE) >= 30


# --- behaviours that need a look beyond the statuses -----------------------------------

GRANDCHILD = """
pid_file = os.path.join(HERE, "grandchild.pid")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pid_file + ".tmp", "w") as handle:
            handle.write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
        while True:
            try:
                os.write(1, b"still here\\n")
                os.write(2, b"still here\\n")
            except OSError:
                pass
    os._exit(0)
while not os.path.exists(pid_file):
    pass
return {"output": 4, "clean": True}
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_grandchild_in_its_own_session_neither_holds_nor_outlives_the_run(
    module: Module, isolation: str
) -> None:
    # Without the sandbox, which would refuse the pid file beside the suite.
    hostile = Hostile(GRANDCHILD, PASS, None, options={"sandbox": "off"})
    run, wall = run_hostile(module, hostile, isolation)
    check(run, wall, hostile, isolation)
    pid = int((module.root / "grandchild.pid").read_text())
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(pid), f"process {pid} outlived the run"
    assert "running; " in run.results[1].stderr


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_rewritten_suite_file_changes_nothing_in_the_run(module: Module, isolation: str) -> None:
    hostile = HOSTILE["rewrite-the-suite-file"]
    run, wall = run_hostile(module, hostile, isolation)
    check(run, wall, hostile, isolation)
    assert "output = 5" in (module.root / "evals.toml").read_text()
    assert run.results[1].observation is not None
    assert run.results[1].observation["output"] == 5


def test_tampered_history_does_not_change_the_recorded_run(module: Module) -> None:
    history_module = pytest.importorskip("cer.history.database")
    history_path = module.root / ".cer" / "history.sqlite"
    body = textwrap.dedent(f"""
        import sqlite3
        db = sqlite3.connect({str(history_path)!r})
        db.execute("UPDATE eval_case_results SET status = 'pass', reason = NULL")
        db.execute("UPDATE eval_run_summary SET cases_passed = cases_total, "
                   "cases_failed = 0, cases_errored = 0")
        db.commit()
        db.close()
        return {{'output': 5, 'clean': True}}
    """)
    hostile = Hostile(body, FAIL, "expected int 4, observed int 5")
    module.suite(SUITE.format(second=hostile.expect))
    name = module.impl(_impl_source(body))
    with history_module.History.open(history_path) as history:
        # Without the sandbox, which keeps the history out of reach: this checks the
        # defence behind it.
        first = module.run(f"{name}:f", timeout=2.0, sandbox="off")
        history.record(first)
    run = module.run(f"{name}:f", timeout=2.0, sandbox="off")
    check(run, 0.0, hostile, "fork")
    with history_module.History.open(history_path) as history:
        history.record(run)
        again = history.load_run(run.run_id)
    assert [r.status for r in again.results] == [PASS, FAIL, PASS]


def test_hostile_output_is_captured_and_bounded(module: Module) -> None:
    hostile = HOSTILE["stdout-100-mb"]
    run, wall = run_hostile(module, hostile, "fork")
    check(run, wall, hostile, "fork")
    stdout = run.results[1].stdout
    assert len(stdout) < 70_000
    assert "output truncated" in stdout


def test_lying_object_never_reaches_the_supervisor(module: Module) -> None:
    hostile = HOSTILE["eq-always-true-nested"]
    run, _ = run_hostile(module, hostile, "fork")
    assert run.results[1].observation is None
    assert "Liar" in (run.results[1].reason or "")


def test_battery_reasons_name_no_false_success(module: Module) -> None:
    """A BaseException's message claiming success stays a message."""
    hostile = HOSTILE["system-exit-message"]
    run, wall = run_hostile(module, hostile, "fork")
    check(run, wall, hostile, "fork")
    assert run.summary.passed == 2 and run.summary.errored == 1


HELPER = """
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
HELPER = subprocess.Popen(["sleep", "60"], start_new_session=True)
with open(os.path.join(HERE, "helper.pid"), "w") as handle:
    handle.write(str(HELPER.pid))


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def f(x, items):
    return {"output": x * 2, "helper": alive(HELPER.pid)}
"""


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_helper_started_at_import_serves_every_case_and_ends_with_the_run(
    module: Module, isolation: str
) -> None:
    """Only what a case leaves behind is killed after it, not what the import started;
    that goes when the run ends."""
    module.suite(
        SUITE.format(second="{ output = 4, helper = true }").replace(
            "clean = true", "helper = true"
        )
    )
    # Without the sandbox, which would refuse the pid file beside the suite.
    run = module.run(f"{module.impl(HELPER)}:f", timeout=2.0, isolation=isolation, sandbox="off")
    assert [r.status for r in run.results] == [PASS, PASS, PASS], [r.reason for r in run.results]
    pid = int((module.root / "helper.pid").read_text())
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(pid), f"the import's helper {pid} outlived the run"

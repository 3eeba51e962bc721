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
from pathlib import Path

import pytest

from cer.model import RunResult, Status
from support import Module, cer_in_process

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


# --- a signature read once ------------------------------------------------------------

# Each case gives the function new parameters once it ran: the next case's call can no
# longer bind its input. That is the runner's problem (errored), never the
# implementation's refusal of the input, which an `error_includes` would accept.
CHANGES_ITS_METHOD = """
class Impl:
    def run_case(self, case):
        def needs_more(self, case, extra):
            return {"output": 1}
        type(self).run_case.__code__ = needs_more.__code__
        return {"output": 1}

impl = Impl()
"""

CHANGES_ITS_FUNCTION = """
def f(x):
    def needs_more(x, extra):
        return {"output": 1}
    f.__code__ = needs_more.__code__
    return {"output": 1}
"""

DROPS_ITS_DEFAULT = """
def f(x, *, scale=1):
    f.__kwdefaults__.clear()
    return {"output": 1}
"""

# With fork isolation a thread the import started changes the function in the worker,
# after its signature was read: every case's process forked later inherits the change.
CHANGED_BY_AN_IMPORT_TIME_THREAD = """
import threading, time

def f(x):
    time.sleep(0.1)
    return {"output": 1}

def needs_more(x, extra):
    return {"output": 1}

def change():
    f.__code__ = needs_more.__code__

threading.Timer(0.2, change).start()
"""


@pytest.mark.parametrize(
    ("source", "attr"),
    [(CHANGES_ITS_METHOD, "impl"), (CHANGES_ITS_FUNCTION, "f"), (DROPS_ITS_DEFAULT, "f")],
    ids=["run_case code", "function code", "keyword default"],
)
def test_a_function_changed_by_a_case_is_bound_anew_without_isolation(
    module: Module, source: str, attr: str
) -> None:
    module.suite(two_cases("{ output = 1 }", '{ error_includes = "argument" }'))
    name = module.impl(source)
    result = module.run(f"{name}:{attr}", isolation="none", jobs=1)
    got = outcome(result)
    assert got[0] == (PASS, ""), got
    status, reason = got[1]
    assert status is ERRORED, got
    assert "with the case's input" in reason, got


def test_a_function_changed_after_the_import_is_bound_anew_with_fork(module: Module) -> None:
    cases = [
        f'[[cases]]\nname = "c{x}"\ncategory = "functional"\ninput = {{ x = {x} }}\n'
        'expect = { error_includes = "argument" }\n'
        for x in range(1, 7)
    ]
    module.suite('commonsformat_evals = "0.2"\ntarget = "t"\n\n' + "\n".join(cases))
    name = module.impl(CHANGED_BY_AN_IMPORT_TIME_THREAD)
    result = module.run(f"{name}:f", isolation="fork", jobs=1)
    got = outcome(result)
    # Cases forked before the change fail (no error); those forked after it cannot
    # bind their input: errored, never passed on the TypeError of a failed bind.
    assert PASS not in [status for status, _ in got], got
    assert got[-1][0] is ERRORED and "with the case's input" in got[-1][1], got


# --- a result kept as it is -------------------------------------------------------------

# A passing case (no mismatch: `has_fields` looks at one key) whose observation holds
# what must not be kept as it is: lone surrogates in keys and values, at the top and
# nested, a string and bytes over the 16 KiB a value keeps, an array over its 1000 items.
# Beside them values that are kept as they are: NaN, -0.0, a huge integer, control text.
LOUD_BUT_PASSING = """
def f(x):
    print("out \\x1b[2J")
    return {
        "output": {
            "a": 1,
            "\\ud800key": "\\udfff",
            "big": "x" * 20000,
            "bytes": b"\\xff" * 20000,
            "many": list(range(1500)),
            "deep": [[[["\\ud801"]]]],
            "nan": float("nan"),
            "neg": -0.0,
            "huge": 10 ** 5000,
            "ctl": "\\x1b[2J\\u202e",
        },
        "extra\\ud800": "\\udc00",
    }
"""


def repr_of_texts(value: object) -> str:
    """Every string and table key in ``value``, joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "".join(repr_of_texts(k) + repr_of_texts(v) for k, v in value.items())
    if isinstance(value, list):
        return "".join(map(repr_of_texts, value))
    return ""


def test_a_passing_result_that_is_not_safe_as_it_is_is_scrubbed_and_bounded(
    module: Module,
) -> None:
    import math

    from cer.reports import FORMATS, ReportContext, render_report
    from cer.suite.loader import load_suite

    module.suite(two_cases('{ has_fields = ["a"] }', '{ has_fields = ["a"] }'))
    name = module.impl(LOUD_BUT_PASSING)
    result = module.run(f"{name}:f", jobs=1)
    assert [r.status for r in result.results] == [PASS, PASS], outcome(result)
    for kept in result.results:
        observation = kept.observation
        assert observation is not None
        # Every text of it can be written as UTF-8: the lone surrogates are escapes.
        repr_of_texts(observation).encode("utf-8")
        assert observation["extra\\ud800"] == "\\udc00"
        output = observation["output"]
        assert output["\\ud800key"] == "\\udfff"
        assert output["deep"] == [[[["\\ud801"]]]]
        assert len(output["big"]) < 20000 and "[cut: " in output["big"]
        assert type(output["bytes"]) is str and "[cut: " in output["bytes"]
        assert len(output["many"]) <= 1001 and "[cut: " in str(output["many"][-1])
        assert math.isnan(output["nan"])
        assert math.copysign(1.0, output["neg"]) == -1.0
        assert output["huge"] == 10**5000
        assert output["ctl"] == "\x1b[2J\u202e"  # kept true; shown as escapes
    context = ReportContext(run=result, suite=load_suite(module.root / "evals.toml"))
    for format_name, report_format in FORMATS.items():
        if report_format.unavailable is not None and report_format.unavailable():
            continue
        text = render_report(format_name, context)
        text.encode("utf-8")
        if format_name in ("tap", "github"):
            assert "\x1b" not in text and "\u202e" not in text, format_name


# --- a suite parsed group by group, and cached as columns -------------------------------

# Cases that differ only in what a loose comparison would miss (1, 1.0 and true; 0.0
# and -0.0; a key with a dot and a dotted key), values marshal cannot hold (dates and
# times), arrays of tables inside a case, quoted and spaced headers, unicode.
TYPED_SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "int"
category = "functional"
input = { v = 1, "a.b" = 1, big = 9223372036854775807, small = -9223372036854775808 }
expect = { output = 1 }

[[cases]]
name = "float"
category = "functional"
input = { v = 1.0, a.b = 1, nan = nan, inf = -inf, zero = -0.0 }
expect = { output = 1.0 }

[[ "adversarial" ]]   # a comment
name = "bool"
category = "functional"
input = { v = true, 'q"uote' = "\\u00e9\\t", empty = {}, list = [] }
expect = { output = true }

[[cases]]
name = "dates"
category = "functional"
input = { d = 1979-05-27, t = 07:32:00.5, dt = 1979-05-27T07:32:00-08:00, l = 1979-05-27T07:32:00 }
expect = { output = 1979-05-27 }

[[generator_adversary]]
name = "tables"
category = "functional"
[generator_adversary.input]
rows = [{ a = 1 }, { a = 1.0 }]
[[generator_adversary.input.more]]
k = "x"
[[generator_adversary.input.more]]
k = "y"
[generator_adversary.expect]
output = [[1, 1.0], [true, "1"]]

[[cases]]
name = "ünï\\u0301code"
category = "functional"
input = { "ключ" = "значение", "" = "" }
expect = { output = "0" }
"""


def strict(suite: object) -> list[str]:
    """Every case of ``suite`` as text that tells 1, 1.0 and True apart, and -0.0 from
    0.0 (``==`` on the tables would not)."""
    return [
        repr(
            (
                case.name,
                case.case_class,
                case.category,
                case.position,
                case.array_index,
                case.input,
                case.expect,
                case.description,
                case.verifies,
                case.tags,
                case.severity,
                case.line,
            )
        )
        for case in suite.cases  # type: ignore[attr-defined]
    ]


@pytest.mark.parametrize("group", [1, 2, 4, 1000])
def test_the_fast_load_and_the_cache_keep_every_type_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: int
) -> None:
    import hashlib
    import tomllib

    from cer.suite import cache as suitecache
    from cer.suite import loader as suite_module
    from cer.suite.cache import cache_file, load_suite_cached

    path = tmp_path / "evals.toml"
    expected = strict(
        suite_module._build_suite(
            tomllib.loads(TYPED_SUITE),
            TYPED_SUITE,
            path,
            hashlib.sha256(TYPED_SUITE.encode()).hexdigest(),
        )
    )
    monkeypatch.setattr(suite_module, "_GROUP", group)
    assert strict(suite_module.parse_suite(TYPED_SUITE, path)) == expected
    # Without the dates the suite can be cached: the entry gives back the same cases.
    undated = TYPED_SUITE.replace(
        "d = 1979-05-27, t = 07:32:00.5, dt = 1979-05-27T07:32:00-08:00, l = 1979-05-27T07:32:00",
        'd = "1979-05-27"',
    ).replace("output = 1979-05-27", 'output = "1979-05-27"')
    path.write_text(undated, encoding="utf-8")
    first = strict(load_suite_cached(path))
    assert cache_file(path).exists()

    def not_parsed(*args: object, **kwargs: object) -> None:
        raise AssertionError("the entry was not served")

    monkeypatch.setattr(suitecache, "parse_suite_columns", not_parsed)
    second = strict(load_suite_cached(path))
    assert second == first == strict(suite_module.load_suite(path))
    assert "-0.0" in second[1] and "nan" in second[1] and "True" in second[2]


# --- the next case handed over before the last answer is judged --------------------------


def numbered_suite(count: int, expect: str = "{ output = 4 }") -> str:
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for x in range(1, count + 1):
        parts.append(
            f'[[cases]]\nname = "c{x}"\ncategory = "functional"\n'
            f"input = {{ x = {x} }}\nexpect = {expect}\n"
        )
    return "\n".join(parts)


# The worker writes every message a few bytes at a time with pauses between the writes:
# each answer arrives over many reads, and no part of one may be taken for a whole one.
TRICKLES = """
import sys, time
from cer.wire import plaindata
from cer.wire.framing import KIND_JSON, KIND_RAW, pack, write_all

worker = sys.modules["cer.worker.main"]

def send(self, message, raw=None):
    data = pack(KIND_JSON, plaindata.dumps(message))
    if raw is not None:
        data += pack(KIND_RAW, raw)
    for at in range(0, len(data), 7):
        write_all(self.ctrl_out, data[at : at + 7])
        time.sleep(0.002)

worker.Worker.send = send

def f(x):
    return {"output": 4 if x != 3 else 5}
"""


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_answers_split_over_many_reads_are_judged_whole(module: Module, isolation: str) -> None:
    module.suite(numbered_suite(4))
    name = module.impl(TRICKLES)
    result = module.run(f"{name}:f", isolation=isolation, jobs=1)
    assert outcome(result) == [
        (PASS, ""),
        (PASS, ""),
        (FAIL, "output: expected int 4, observed int 5"),
        (PASS, ""),
    ]


# The worker answers the first case, then sends the same answer again while the second
# case (handed over at once) is running: a second answer for a case already answered
# never answers the one in flight.
ANSWERS_TWICE = """
import sys, threading, time

worker = sys.modules["cer.worker.main"]
_send = worker.Worker.send
sent = []

def send(self, message, raw=None):
    _send(self, message, raw)
    if message.get("op") == "result" and not sent:
        sent.append(message)
        threading.Timer(0.1, _send, (self, message, raw)).start()

worker.Worker.send = send

def f(x):
    if x == 2:
        time.sleep(0.5)
    return {"output": 4}
"""


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_second_answer_arriving_during_the_next_case_errors_it(
    module: Module, isolation: str
) -> None:
    module.suite(numbered_suite(3))
    name = module.impl(ANSWERS_TWICE)
    result = module.run(f"{name}:f", isolation=isolation, jobs=1)
    got = outcome(result)
    assert got[0] == (PASS, ""), got
    assert got[1][0] is ERRORED and "answers no case in flight" in got[1][1], got
    assert got[2] == (PASS, ""), got


# --- what the command line imports only when a command runs ----------------------------

SWEEP_SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "a"
category = "functional"
verifies = ["known", "unknown"]
input = { x = 1 }
expect = { output = 1 }

[[cases]]
name = "b"
category = "functional"
input = { x = 2 }
expect = { output = 3 }

[[cases]]
name = "c"
category = "no such category"
input = { x = 2 }
expect = { output = 3 }
"""

SWEEP_COMMANDS = {
    "run, every report": [
        "run", "evals.toml", "--impl", "m:f", "--coverage", "-v",
        "--report", "junit", "--report", "json", "--report", "tap",
        "--report", "manifest", "--report", "github", "--report", "html",
    ],
    "run, json to a file": [
        "run", "evals.toml", "--impl", "m:f", "--format", "json", "-o", "r.json"
    ],
    "run, a matrix": [
        "run", "evals.toml", "--impl", "m:f", "--impl-cmd-per-case", "python3 -c pass",
        "--report", "junit", "--report", "json",
    ],
    "run, a harness": ["run", "evals.toml", "--impl-cmd", "python3 -c pass", "--timeout", "2"],
    "run, no isolation, a shard": [
        "run", "evals.toml", "--impl", "m:f", "--isolation", "none", "-j", "2", "--shard", "1/2"
    ],
    "run, failed only": ["run", "evals.toml", "--impl", "m:f", "--failed"],
    "history": ["history"],
    "history of a case, json": ["history", "--case", "b", "--format", "json"],
    "history as html": ["history", "--html", "h.html"],
    "approvals": ["history", "--approvals"],
    "diff": ["diff"],
    "diff, json": ["diff", "--format", "json"],
    "check": ["check", "evals.toml"],
    "merge": ["merge", "r.json"],
    "derive": ["derive", "evals.toml"],
    "approve": ["approve", "nothing"],
    "discard": ["discard", "nothing"],
}  # fmt: skip


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sweep")
    (folder / "evals.toml").write_text(SWEEP_SUITE, encoding="utf-8")
    (folder / "m.py").write_text("def f(x):\n    return {'output': x}\n", encoding="utf-8")
    (folder / "commonsformat.md").write_text(
        "# M\n\n## Constraints\n\n- `known` — a constraint\n", encoding="utf-8"
    )
    for argv in (["run", "evals.toml", "--impl", "m:f"], SWEEP_COMMANDS["run, json to a file"]):
        cer_in_process(argv, folder)  # the folder's runs; the commands run in processes
    return folder


@pytest.mark.parametrize("command", sorted(SWEEP_COMMANDS))
def test_every_command_imports_what_it_needs_in_a_fresh_process(
    sweep_folder: Path, command: str
) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "cer.cli", *SWEEP_COMMANDS[command]],
        cwd=sweep_folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-2000:]
    assert done.returncode in (0, 1, 2, 3), (done.returncode, done.stderr[-2000:])


# --- a worker that stops reading its channel ------------------------------------------

# The worker answers its case and then never reads its channel again. The next case's
# input is larger than a pipe holds, so handing it over cannot complete: the supervisor
# must not wait on that write for good (no deadline would ever be enforced again).
STOPS_READING = """
import sys, time

worker = sys.modules["cer.worker.main"]
_send = worker.Worker.send

def send(self, message, raw=None):
    _send(self, message, raw)
    if message.get("op") == "result":
        time.sleep(120)  # answered; never takes its next case

worker.Worker.send = send

def f(s):
    return {"output": 1}
"""


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_worker_that_stops_reading_cannot_hang_the_run(module: Module, isolation: str) -> None:
    import json
    import subprocess
    import sys

    big = "x" * 300_000  # several times what a pipe holds
    module.suite(
        'commonsformat_evals = "0.2"\ntarget = "t"\n\n'
        + "\n".join(
            f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
            f'input = {{ s = "{text}" }}\nexpect = {{ output = 1 }}\n'
            for name, text in (("small", "a"), ("large", big), ("last", "b"))
        )
    )
    name = module.impl(STOPS_READING)
    done = subprocess.run(
        [
            sys.executable, "-m", "cer.cli", "run", "evals.toml", "--impl", f"{name}:f",
            "--timeout", "1", "-j", "1", "--isolation", isolation, "--no-history",
            "--format", "json",
        ],
        cwd=module.root,
        capture_output=True,
        text=True,
        timeout=120,  # a guard against a hang, not a measurement
    )  # fmt: skip
    results = {r["case_name"]: r for r in json.loads(done.stdout)["results"]}
    assert results["small"]["status"] == "pass"
    # The large case was never taken by the worker that stopped reading: it runs on a
    # new worker, which answers it and stops reading in turn.
    assert results["large"]["status"] == "pass", results["large"]
    assert results["last"]["status"] == "errored"
    assert "timed out after 1 s" in results["last"]["reason"]


# Without isolation a worker that finds its state changed says so with its answer and
# exits; the supervisor hands it nothing more. This worker says so after every answer
# and stays: waiting for the exit it announced would wait for ever.
CLAIMS_IT_WILL_EXIT = """
import sys

worker = sys.modules["cer.worker.main"]
_send = worker.Worker.send

def send(self, message, raw=None):
    if message.get("op") == "result":
        message = dict(message, anomaly="changed its state, and stays all the same")
    _send(self, message, raw)

worker.Worker.send = send

def f(s):
    return {"output": 1 if s != "c" else 2}
"""


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_worker_that_announces_its_exit_and_stays_cannot_hang_the_run(
    module: Module, isolation: str
) -> None:
    import json
    import subprocess
    import sys

    module.suite(
        'commonsformat_evals = "0.2"\ntarget = "t"\n\n'
        + "\n".join(
            f'[[cases]]\nname = "{s}"\ncategory = "functional"\n'
            f'input = {{ s = "{s}" }}\nexpect = {{ output = 1 }}\n'
            for s in "abcd"
        )
    )
    name = module.impl(CLAIMS_IT_WILL_EXIT)
    done = subprocess.run(
        [
            sys.executable, "-m", "cer.cli", "run", "evals.toml", "--impl", f"{name}:f",
            "--timeout", "1", "-j", "1", "--isolation", isolation, "--no-history",
            "--format", "json",
        ],
        cwd=module.root,
        capture_output=True,
        text=True,
        timeout=120,  # a guard against a hang, not a measurement
    )  # fmt: skip
    results = json.loads(done.stdout)["results"]
    # Each answer is judged as it came; every case runs, each on a worker of its own.
    assert [r["status"] for r in results] == ["pass", "pass", "fail", "pass"], results


def test_a_stopped_worker_with_a_full_channel_is_neither_waited_on_nor_asked_twice() -> None:
    import os
    import signal
    import threading

    from cer.engine.python.workerproc import WorkerLost, WorkerProcess

    worker = WorkerProcess()
    try:
        os.kill(worker.process.pid, signal.SIGSTOP)
        worker.write_timeout = 0.2
        with pytest.raises(WorkerLost, match="stopped reading its channel"):
            worker.send_case(1, b"x" * 1_000_000)
        with pytest.raises(WorkerLost, match="stopped reading its channel"):
            worker.send_case(2, b"{}")  # known deaf: fails at once
        fresh = WorkerProcess()
        try:
            os.kill(fresh.process.pid, signal.SIGSTOP)
            fresh.write_timeout = 600.0
            # Its channel full, a request to quit does not wait for room.
            while True:
                try:
                    os.write(fresh._to_worker, b"\0" * 65536)
                except BlockingIOError:
                    break
            asking = threading.Thread(target=fresh.ask_to_quit, daemon=True)
            asking.start()
            asking.join(60.0)  # a guard against a hang, not a measurement
            assert not asking.is_alive()
        finally:
            fresh.kill()
    finally:
        worker.kill()

"""Command implementations (--impl-cmd, --impl-cmd-per-case).

The example harnesses pass their suites. Broken harnesses have the case that was
running errored, with the evidence, and the next case is unaffected. Typed values keep
their types both ways. The schemas in docs/protocol/ describe what the runner really
sends and accepts.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cer.engine.command import backend as commandimpl
from cer.engine.command import harness, protocol
from cer.engine.command.backend import CommandExecution
from cer.engine.command.protocol import outcome_from_result, parse_message, run_request
from cer.engine.command.values import ProtocolError, decode_value, encode_value
from cer.engine.execution import Setup
from cer.engine.options import RunCancelled, RunOptions
from cer.engine.plan import Planned
from cer.engine.runner import run_suite
from cer.events import ImplementationFailed, ImplementationLoaded, RunEvent
from cer.model import RunResult, Status
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from support import EXAMPLES, ROOT, Module, single_case_suite, statuses

HARNESSES = EXAMPLES / "harnesses"
CALC_SUITE = EXAMPLES / "calc" / "evals.toml"
SCHEMAS = ROOT / "docs" / "protocol"
PYTHON = shlex.quote(sys.executable)
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")

P, F, E, S = Status.PASS, Status.FAIL, Status.ERRORED, Status.SKIPPED


def run_command(
    suite: Path,
    command: str,
    kind: str = "command",
    events: list[RunEvent] | None = None,
    **options: Any,
) -> RunResult:
    options.setdefault("timeout", 5.0)
    sink = events.append if events is not None else None
    return run_suite(
        load_suite(suite), RunOptions(impl=command, kind=kind, **options), on_event=sink
    )


def by_name(run: RunResult) -> dict[str, Status]:
    return {r.case_name: r.status for r in run.results}


def reason(run: RunResult, name: str) -> str:
    return next(r.reason or "" for r in run.results if r.case_name == name)


def suite_text(*cases: tuple[str, str, str]) -> str:
    """A suite of (name, input, expect) cases, inline tables given as TOML text."""
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for name, input_, expect in cases:
        parts.append(
            f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
            f"input = {input_}\nexpect = {expect}\n"
        )
    return "\n".join(parts)


# --------------------------------------------------------------- example harnesses


def test_python_harness_passes_the_calc_suite() -> None:
    events: list[RunEvent] = []
    command = f"{PYTHON} {HARNESSES / 'calc_harness.py'}"
    run = run_command(CALC_SUITE, command, events=events)
    assert len(run.results) == 70
    assert {r.case_name: r.status for r in run.results if r.status is not P} == {}
    loaded = [e for e in events if isinstance(e, ImplementationLoaded)]
    assert len(loaded) == 1
    assert loaded[0].implementation_id == run.implementation_id
    assert run.implementation_id.startswith(f"cmd:{command}@")
    sources = {Path(f).name for f in loaded[0].source_files}
    assert {"calc_harness.py", "calc_ref.py"} <= sources
    assert all(r.elapsed_ms is not None for r in run.results)


@needs_node
def test_node_harness_passes_the_calc_suite() -> None:
    run = run_command(CALC_SUITE, f"node {HARNESSES / 'calc_harness.mjs'}")
    assert len(run.results) == 70
    assert {r.case_name: r.status for r in run.results if r.status is not P} == {}


@pytest.mark.parametrize("language", ["python", pytest.param("node", marks=needs_node)])
def test_example_harness_per_case_passes_rejection_and_file_cases(language: str) -> None:
    """One process per case costs a start-up each, so a slice of the suite: values,
    rejections with error types, and inputs read from fixture files."""
    command = (
        f"{PYTHON} {HARNESSES / 'calc_harness.py'}"
        if language == "python"
        else f"node {HARNESSES / 'calc_harness.mjs'}"
    )
    selection = Selection(categories=("interface", "failure-mode"))
    run = run_command(
        CALC_SUITE, f"{command} --per-case", kind="command-per-case", selection=selection
    )
    ran = [r for r in run.results if r.status is not S]
    assert len(ran) == 11
    assert all(r.status is P for r in ran), [(r.case_name, r.reason) for r in ran]
    assert run.implementation_id.startswith(f"cmd-per-case:{command} --per-case@")


def test_a_command_is_judged_exactly_like_the_same_code_imported() -> None:
    """calc_sloppy's failures, found through the harness, are the ones --impl finds."""
    sloppy = EXAMPLES / "calc" / "calc_sloppy.py"
    through_command = run_command(
        CALC_SUITE, f"{PYTHON} {HARNESSES / 'calc_harness.py'} --module {sloppy}"
    )
    imported = run_suite(load_suite(CALC_SUITE), RunOptions(impl="calc_sloppy:evaluate"))
    assert statuses(through_command) == statuses(imported)
    assert sum(r.status is F for r in through_command.results) == 8
    for ours, theirs in zip(through_command.results, imported.results, strict=True):
        if ours.status is F:
            assert theirs.observation is not None and ours.observation is not None
            assert {**ours.observation, "elapsed_ms": 0} == {**theirs.observation, "elapsed_ms": 0}


def test_implementation_id_follows_the_harness_content(tmp_path: Path) -> None:
    harness = tmp_path / "harness.py"
    harness.write_text((HARNESSES / "calc_harness.py").read_text(encoding="utf-8"))
    (tmp_path / "evals.toml").write_text(suite_text(("one", '{ expr = "1" }', "{ value = 1 }")))
    command = f"{PYTHON} {harness} --module {EXAMPLES / 'calc' / 'calc_ref.py'}"
    first = run_command(tmp_path / "evals.toml", command).implementation_id
    again = run_command(tmp_path / "evals.toml", command).implementation_id
    with harness.open("a") as handle:
        handle.write("# edited\n")
    edited = run_command(tmp_path / "evals.toml", command).implementation_id
    assert first == again
    assert edited != first
    assert edited.startswith(f"cmd:{command}@")


# ------------------------------------------------------------------ broken harnesses

BROKEN = r"""
import json, os, sys, time

MODE = sys.argv[1] if len(sys.argv) > 1 else ""
out = sys.stdout


def send(message):
    out.write(json.dumps(message) + "\n")
    out.flush()


def say(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


if MODE == "crash-on-start":
    say("Traceback (most recent call last):\nRuntimeError: cannot load the module")
    sys.exit(1)
if MODE == "once":
    if os.path.exists(sys.argv[2]):
        say("refusing to start twice")
        sys.exit(4)
    open(sys.argv[2], "w").close()
if MODE == "pidfile":
    with open(sys.argv[2], "a") as handle:
        handle.write(f"{os.getpid()}\n")

for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        if MODE == "silent-start":
            time.sleep(60)
        send({"op": "started", "protocol": 2 if MODE == "protocol-2" else 1,
              "implementation": {"name": "broken", "version": "1"}})
        continue
    if message["op"] != "run":
        break
    seq, case = message["seq"], message["case"]
    name = case["name"]
    inputs = case["input"]["value"]
    answer = {"op": "result", "seq": seq, "observation": inputs.get("v", {"type": "null"})}
    say(f"stderr of {name}")
    if name == "crash" or MODE == "always-crash":
        say("boom: the implementation crashed")
        os._exit(3)
    elif name == "exit-quietly":
        sys.exit(0)
    elif name == "garbage":
        out.write("this is not json\n")
        out.flush()
    elif name == "wrong-seq":
        send({**answer, "seq": seq + 100})
    elif name == "twice":
        send(answer)
        send(answer)
    elif name == "hang":
        say("stuck in a loop")
        time.sleep(60)
    elif name == "flood-hang":
        sys.stderr.write("x" * 2_000_000 + "\nlast words before the hang\n")
        sys.stderr.flush()
        time.sleep(60)
    elif name == "flood-ok":
        sys.stderr.write("y" * 2_000_000 + "\nlast words\n")
        sys.stderr.flush()
        send(answer)
    elif name == "untagged":
        send({**answer, "observation": 1})
    elif name == "two-bodies":
        send({**answer, "error": {"type": "ValueError", "message": "no"}})
    elif name == "harness-error":
        send({"op": "result", "seq": seq,
              "harness_error": {"message": "cannot handle this input"}})
    elif name.startswith("reject"):
        send({"op": "result", "seq": seq,
              "error": {"type": "ValueError", "message": "bad input: 1"}})
    elif name.startswith("reply"):
        out.write('{"op":"result","seq":%d,"observation":%s}\n'
                  % (seq, inputs["raw"]["value"]))
        out.flush()
    else:
        send(answer)
"""


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken_harness.py"
    path.write_text(BROKEN, encoding="utf-8")
    return path


def around(bad: str) -> str:
    """``before``, the misbehaving case, ``after``: all three echo v = 1 as output."""
    return suite_text(*[(name, "{ v = 1 }", "{ output = 1 }") for name in ("before", bad, "after")])


@pytest.mark.parametrize(
    ("bad", "timeout", "evidence"),
    [
        (
            "crash",
            5.0,
            ["exited with status 3 while running this case", "boom: the implementation crashed"],
        ),
        ("exit-quietly", 5.0, ["exited with status 0 while running this case"]),
        ("garbage", 5.0, ["not a protocol message", "'this is not json'"]),
        ("wrong-seq", 5.0, ["the result carries seq ", " was asked"]),
        ("twice", 5.0, ["answered this case twice"]),
        ("hang", 1.0, ["timed out after 1 s", "stuck in a loop"]),
        ("flood-hang", 1.0, ["timed out after 1 s", "last words before the hang"]),
        ("untagged", 5.0, ["expected a typed value", "got 1"]),
        ("two-bodies", 5.0, ['exactly one of "observation", "error" and "harness_error"']),
        ("harness-error", 5.0, ["the harness could not run this case: cannot handle"]),
    ],
)
def test_misbehaving_case_is_errored_with_evidence_and_the_next_is_unaffected(
    module: Module, broken: Path, bad: str, timeout: float, evidence: list[str]
) -> None:
    module.suite(around(bad))
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken}", timeout=timeout)
    assert statuses(run) == [("before", P), (bad, E), ("after", P)]
    why = reason(run, bad)
    for text in evidence:
        assert text in why
    after = run.results[2]
    assert after.stderr == "stderr of after\n"
    assert "stderr of before" not in run.results[1].stderr


def test_stderr_flood_keeps_its_tail_and_the_case_still_passes(
    module: Module, broken: Path
) -> None:
    module.suite(around("flood-ok"))
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken}", capture_limit=4096)
    assert statuses(run) == [("before", P), ("flood-ok", P), ("after", P)]
    stderr = run.results[1].stderr
    assert stderr.endswith("last words\n")
    assert "earlier bytes of stderr dropped" in stderr
    assert len(stderr) < 4096 + 100


def test_flooded_and_silent_harness_shows_the_tail(module: Module, broken: Path) -> None:
    module.suite(around("flood-hang"))
    run = run_command(
        module.root / "evals.toml", f"{PYTHON} {broken}", timeout=1.0, capture_limit=4096
    )
    stderr = run.results[1].stderr
    assert stderr.endswith("last words before the hang\n")
    assert "dropped" in stderr


def test_second_answer_to_the_last_case_voids_it(module: Module, broken: Path) -> None:
    module.suite(
        suite_text(
            ("before", "{ v = 1 }", "{ output = 1 }"), ("twice", "{ v = 1 }", "{ output = 1 }")
        )
    )
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken}")
    assert statuses(run) == [("before", P), ("twice", E)]
    assert "answered this case twice" in reason(run, "twice")


def test_error_response_is_a_rejection_and_harness_error_never_is(
    module: Module, broken: Path
) -> None:
    module.suite(
        suite_text(
            (
                "reject-typed",
                "{ v = 1 }",
                '{ rejects = true, error_type = "ValueError", error_includes = "bad input" }',
            ),
            ("reject-wrong-type", "{ v = 1 }", '{ rejects = true, error_type = "TypeError" }'),
            ("reject-unexpected", "{ v = 1 }", "{ output = 1 }"),
            ("harness-error", "{ v = 1 }", "{ rejects = true }"),
            ("after", "{ v = 1 }", "{ output = 1 }"),
        )
    )
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken}")
    assert by_name(run) == {
        "reject-typed": P,
        "reject-wrong-type": F,
        "reject-unexpected": E,
        "harness-error": E,
        "after": P,
    }
    assert "the implementation raised ValueError: bad input: 1" in reason(run, "reject-unexpected")


@pytest.mark.parametrize(
    ("mode", "evidence"),
    [
        (
            "crash-on-start",
            ["exited with status 1 before answering start", "RuntimeError: cannot load the module"],
        ),
        (
            "protocol-2",
            ["the harness speaks protocol version 2; this runner speaks only version 1"],
        ),
        ("silent-start", ["did not answer start within 0.5 s"]),
    ],
)
def test_harness_that_fails_to_start_errors_every_case(
    module: Module,
    broken: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    evidence: list[str],
) -> None:
    monkeypatch.setattr(harness, "START_TIMEOUT_MIN", 0.5)
    module.suite(around("ok"))
    events: list[RunEvent] = []
    run = run_command(
        module.root / "evals.toml", f"{PYTHON} {broken} {mode}", events=events, timeout=0.5
    )
    assert [s for _, s in statuses(run)] == [E, E, E]
    # The cause is said once, with its evidence, in the run's note; each case is "not
    # run" for that cause, its stderr kept beside it.
    (note,) = [note for note in run.notes if "could not be started" in note]
    for text in evidence:
        assert text in note
    for result in run.results:
        assert (result.reason or "") == f"not run: {note.split('; its stderr ends with:')[0]}"
        assert evidence[0] in (result.reason or "")
    failed = [e for e in events if isinstance(e, ImplementationFailed)]
    assert len(failed) == 1
    assert not any(isinstance(e, ImplementationLoaded) for e in events)
    if mode == "crash-on-start":
        assert "cannot load the module" in run.results[0].stderr
        assert "cannot load the module" in failed[0].traceback


def test_missing_command_errors_every_case(module: Module) -> None:
    module.suite(around("ok"))
    for kind in ("command", "command-per-case"):
        run = run_command(module.root / "evals.toml", "/nonexistent/harness --flag", kind=kind)
        assert [s for _, s in statuses(run)] == [E, E, E]
        assert "cannot run '/nonexistent/harness'" in (run.results[0].reason or "")


def test_a_harness_crashing_on_every_case_is_restarted_for_each(
    module: Module, broken: Path
) -> None:
    names = [f"c{i}" for i in range(1, 7)]
    module.suite(suite_text(*[(n, "{ v = 1 }", "{ output = 1 }") for n in names]))
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken} always-crash")
    assert [s for _, s in statuses(run)] == [E] * 6
    for name in names:  # each case had its own try: none is left "not run"
        assert "exited with status 3 while running this case" in reason(run, name)
    assert any(note.startswith("the harness was started again 5 times") for note in run.notes)


def test_failed_restart_errors_the_remaining_cases(
    module: Module, broken: Path, tmp_path: Path
) -> None:
    module.suite(
        suite_text(
            *[(n, "{ v = 1 }", "{ output = 1 }") for n in ("before", "crash", "after", "later")]
        )
    )
    marker = tmp_path / "started-once"
    # Without the sandbox: the harness leaves a marker outside the scratch folder.
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken} once {marker}", sandbox="off")
    assert statuses(run) == [("before", P), ("crash", E), ("after", E), ("later", E)]
    for name in ("after", "later"):
        why = reason(run, name)
        assert "not run: the harness could not be restarted (3 attempts in a row)" in why
        assert "exited with status 4" in why
        assert "refusing to start twice" in why


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_cancel_kills_a_hanging_harness(module: Module, broken: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    module.suite(suite_text(("hang", "{ v = 1 }", "{ output = 1 }")))
    cancel = threading.Event()
    outcome: list[BaseException | RunResult] = []

    def target() -> None:
        try:
            outcome.append(
                run_suite(
                    load_suite(module.root / "evals.toml"),
                    RunOptions(
                        impl=f"{PYTHON} {broken} pidfile {pidfile}",
                        kind="command",
                        timeout=30.0,
                        sandbox="off",  # the harness writes its pid beside the suite
                    ),
                    cancel=cancel,
                )
            )
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    cancel.set()
    started = time.monotonic()
    thread.join(10)
    assert time.monotonic() - started < 2
    assert len(outcome) == 1 and isinstance(outcome[0], RunCancelled)
    assert _gone(int(pidfile.read_text().split()[0]))


def test_python_entry_point_categories_are_skipped(module: Module) -> None:
    module.suite(single_case_suite("{ output = 1 }", "{ v = 1 }", category="concurrency"))
    suite = load_suite(module.root / "evals.toml")
    execution = CommandExecution(
        Setup(suite, RunOptions(impl="never-started", kind="command"), lambda event: None)
    )
    case = suite.cases[0]
    commandimpl.execute(execution, [Planned(case, {"v": 1}, "entrypoint:pkg.mod:Model")])
    result = execution.results[case.position]
    assert result.status is S
    assert "category not supported by command implementations: concurrency" in (result.reason or "")


# ---------------------------------------------------------------------- typed values


def test_encoding_keeps_one_one_point_oh_true_and_the_string_one_apart() -> None:
    assert encode_value(1) == {"type": "integer", "value": "1"}
    assert encode_value(1.0) == {"type": "float", "value": "1.0"}
    assert encode_value(True) == {"type": "bool", "value": True}
    assert encode_value("1") == {"type": "string", "value": "1"}
    assert encode_value(float("nan")) == {"type": "float", "value": "nan"}
    assert encode_value(float("-inf")) == {"type": "float", "value": "-inf"}
    assert encode_value({"$bytes": "x"}) == {
        "type": "table",
        "value": {"$bytes": {"type": "string", "value": "x"}},
    }


def test_big_integers_cross_as_text_both_ways() -> None:
    big = 7 * 10**9000 + 1
    encoded = encode_value(-big)
    assert encoded["value"] == "-7" + "0" * 8999 + "1"
    assert decode_value(encoded) == -big


TYPED_REPLIES = [
    # (raw observation the harness sends, TOML expected output, status)
    ('{"type":"integer","value":"1"}', "1", P),
    ('{"type":"integer","value":1}', "1", P),
    ('{"type":"float","value":"1"}', "1", F),
    ('{"type":"float","value":"1"}', "1.0", P),
    ('{"type":"float","value":1}', "1.0", P),
    ('{"type":"integer","value":"1"}', "1.0", F),
    ('{"type":"bool","value":true}', "1", F),
    ('{"type":"integer","value":"1"}', "true", F),
    ('{"type":"string","value":"1"}', "1", F),
    ('{"type":"string","value":"1"}', '"1"', P),
    ('{"type":"float","value":"nan"}', "nan", P),
    ('{"type":"float","value":"NaN"}', "nan", P),
    ('{"type":"float","value":"nan"}', "1.5", F),
    ('{"type":"float","value":"-inf"}', "-inf", P),
    ('{"type":"float","value":"Infinity"}', "-inf", F),
    ('{"type":"float","value":"2.5e-3"}', "0.0025", P),
    ('{"type":"datetime","value":"1979-05-27T07:32:00Z"}', "1979-05-27T07:32:00Z", P),
    ('{"type":"datetime-local","value":"1979-05-27T07:32:00"}', "1979-05-27T07:32:00Z", F),
    ('{"type":"datetime-local","value":"1979-05-27T07:32:00"}', "1979-05-27T07:32:00", P),
    ('{"type":"date-local","value":"1979-05-27"}', "1979-05-27", P),
    ('{"type":"time-local","value":"07:32:00"}', "07:32:00", P),
    (
        '{"type":"array","value":[{"type":"integer","value":"1"},{"type":"float","value":"2.5"}]}',
        "[1, 2.5]",
        P,
    ),
    (
        '{"type":"array","value":[{"type":"float","value":"1"},{"type":"float","value":"2.5"}]}',
        "[1, 2.5]",
        F,
    ),
    ('{"type":"null"}', "1", F),
    # malformed: never guessed at
    ('{"type":"integer","value":"1.0"}', "1", E),
    ('{"type":"integer","value":1.0}', "1", E),
    ('{"type":"integer","value":true}', "1", E),
    ('{"type":"float","value":"1_0"}', "10.0", E),
    ('{"type":"float","value":NaN}', "nan", E),
    ('{"type":"integer","value":"1","unit":"m"}', "1", E),
    ('{"type":"number","value":"1"}', "1", E),
    ('{"type":"bool","value":1}', "true", E),
    ('{"type":"string","value":1}', '"1"', E),
    ('{"type":"null","value":0}', "1", E),
    ('{"type":"datetime","value":"1979-05-27T07:32:00"}', "1979-05-27T07:32:00Z", E),
    ('{"type":"array","value":[1]}', "[1]", E),
    ('{"type":"string","value":"\\ud800"}', '"x"', E),
    ("1", "1", E),
]


def test_typed_observations_keep_their_types(module: Module, broken: Path) -> None:
    cases = []
    expected: dict[str, Status] = {}
    for i, (raw, output, status) in enumerate(TYPED_REPLIES):
        cases.append((f"reply-{i}", f"{{ raw = '{raw}' }}", f"{{ output = {output} }}"))
        expected[f"reply-{i}"] = status
        if status is E:  # a healthy answer between violations keeps the restart budget
            cases.append((f"ok-{i}", "{ v = 1 }", "{ output = 1 }"))
            expected[f"ok-{i}"] = P
    module.suite(suite_text(*cases))
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken}")
    got = by_name(run)
    assert {
        n: (TYPED_REPLIES[int(n.split("-")[1])][0], s)
        for n, s in got.items()
        if s is not expected[n]
    } == {}


def test_table_observation_is_the_observation_itself(module: Module, broken: Path) -> None:
    raw = (
        '{"type":"table","value":{"total":{"type":"integer","value":"3"},'
        '"$type":{"type":"string","value":"kept"},"value":{"type":"bool","value":false}}}'
    )
    module.suite(
        suite_text(
            (
                "reply-table",
                f"{{ raw = '{raw}' }}",
                '{ total = 3, "$type" = "kept", value = false }',
            ),
            ("reply-table-wrong", f"{{ raw = '{raw}' }}", "{ total = 3.0 }"),
        )
    )
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken}")
    assert by_name(run) == {"reply-table": P, "reply-table-wrong": F}


ECHOED = {
    "int": "1",
    "float": "1.0",
    "bool": "true",
    "text-one": '"1"',
    "nan": "nan",
    "inf": "inf",
    "minus-inf": "-inf",
    "negative-zero": "-0.0",
    "largest-int": "9223372036854775807",
    "offset-datetime": "1979-05-27T00:32:00-07:00",
    "local-datetime": "1979-05-27T07:32:00.999999",
    "date": "1979-05-27",
    "time": "07:32:00",
    "array": '[1, 2.5, "x", [true], []]',
    # in an array: a table observation would be the observation itself, not `output`
    "tables": '[{ a = 1, "b c" = { d = 2.5 }, "$bytes" = "x", type = "t", value = [] }]',
    "unicode": '"é ☃ 𝄞"',
}


def test_inputs_cross_with_their_types(module: Module, broken: Path) -> None:
    """The harness echoes its input back: what the runner sent is what it meant."""
    cases = [(name, f"{{ v = {toml} }}", f"{{ output = {toml} }}") for name, toml in ECHOED.items()]
    cases += [
        ("int-is-not-float", "{ v = 1 }", "{ output = 1.0 }"),
        ("float-is-not-int", "{ v = 1.0 }", "{ output = 1 }"),
        ("bool-is-not-int", "{ v = true }", "{ output = 1 }"),
        ("text-is-not-int", '{ v = "1" }', "{ output = 1 }"),
        ("local-is-not-offset", "{ v = 1979-05-27T07:32:00 }", "{ output = 1979-05-27T07:32:00Z }"),
    ]
    module.suite(suite_text(*cases))
    run = run_command(module.root / "evals.toml", f"{PYTHON} {broken}")
    assert by_name(run) == {**dict.fromkeys(ECHOED, P), **{name: F for name, *_ in cases[-5:]}}


# ------------------------------------------------------------------ per-case protocol

PER_CASE = r"""
import json, os, signal, sys, time

request = json.loads(sys.stdin.read())
case = request["case"]
name = case["name"].split("~")[0]
sys.stderr.write(f"stderr of {case['name']}\n")
sys.stderr.flush()
value = case["input"]["value"].get("v", {"type": "null"})
if name == "ok":
    print(json.dumps({"observation": value}))
elif name == "ok-envelope":
    print(json.dumps({"op": "result", "seq": request["seq"], "observation": value}))
elif name == "wrong-seq":
    print(json.dumps({"op": "result", "seq": request["seq"] + 1, "observation": value}))
elif name == "exit-2":
    sys.exit(2)
elif name == "error-doc":
    print(json.dumps({"error": {"type": "ValueError", "message": "bad input"}}))
    sys.exit(1)
elif name == "garbage":
    print("not json at all")
elif name == "observation-exit-3":
    print(json.dumps({"observation": value}))
    sys.exit(3)
elif name == "sleep":
    time.sleep(60)
elif name == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif name == "harness-error":
    print(json.dumps({"harness_error": {"message": "cannot"}}))
elif name == "protocol":
    print(json.dumps({"observation": {"type": "integer", "value": str(request["protocol"])}}))
elif name == "refuse":
    print(json.dumps({"op": "refused", "protocol": 2, "reason": "speaks only version 2"}))
    sys.exit(1)
elif name == "refuse-bare":
    print(json.dumps({"op": "refused", "seq": request["seq"], "protocol": 2}))
elif name == "refuse-badly":
    print(json.dumps({"op": "refused", "protocol": "2"}))
"""

PER_CASE_CASES: list[tuple[str, str, Status, str]] = [
    # (name, expect, status, text in the reason)
    ("ok", "{ output = 1 }", P, ""),
    ("ok-envelope", "{ output = 1 }", P, ""),
    ("ok~mismatch", "{ output = 2 }", F, ""),
    ("wrong-seq", "{ output = 1 }", E, "seq"),
    ("exit-2~as-rejection", "{ rejects = true }", E, "exited with status 2 without an error"),
    ("exit-2~as-value", "{ output = 1 }", E, "exited with status 2 without an error"),
    (
        "error-doc~typed",
        '{ rejects = true, error_type = "ValueError", error_includes = "bad" }',
        P,
        "",
    ),
    ("error-doc~wrong-type", '{ rejects = true, error_type = "TypeError" }', F, ""),
    ("garbage", "{ output = 1 }", E, "not json at all"),
    ("silent", "{ output = 1 }", E, "exited with status 0 without printing a result"),
    ("observation-exit-3", "{ output = 1 }", E, "exited with status 3 after printing"),
    ("sleep", "{ output = 1 }", E, "timed out after 1 s"),
    ("sleep~hung", "{ hung = true }", P, ""),
    ("sigkill", "{ output = 1 }", E, "killed by SIGKILL"),
    ("sigkill~crashed", "{ crashed = true }", P, ""),
    ("harness-error", "{ rejects = true }", E, "could not run this case: cannot"),
    # each request offers the protocol version, and the command may refuse it
    ("protocol", "{ output = 1 }", P, ""),
    (
        "refuse",
        "{ rejects = true }",
        E,
        "not run: the command refused protocol version 1: it speaks version 2 "
        "(docs/protocol.md): speaks only version 2",
    ),
    ("refuse-bare~as-value", "{ output = 1 }", E, "not run: the command refused protocol"),
    ("refuse-badly", "{ rejects = true }", E, "a refusal needs the integer protocol version"),
]


def test_per_case_outcomes(module: Module, tmp_path: Path) -> None:
    script = tmp_path / "per_case.py"
    script.write_text(PER_CASE, encoding="utf-8")
    module.suite(suite_text(*[(n, "{ v = 1 }", expect) for n, expect, *_ in PER_CASE_CASES]))
    run = run_command(
        module.root / "evals.toml", f"{PYTHON} {script}", kind="command-per-case", timeout=1.0
    )
    assert by_name(run) == {name: status for name, _, status, _ in PER_CASE_CASES}
    for name, _, _, text in PER_CASE_CASES:
        assert text in reason(run, name)
    for result in run.results:
        assert result.stderr.startswith(f"stderr of {result.case_name}\n")
    assert any(
        note.startswith("the command refused protocol version 1: it speaks version 2")
        for note in run.notes
    )


def test_per_case_cancel_kills_the_process(module: Module, tmp_path: Path) -> None:
    script = tmp_path / "sleeper.py"
    pidfile = tmp_path / "pid"
    script.write_text(
        f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n",
        encoding="utf-8",
    )
    module.suite(suite_text(("sleep", "{ v = 1 }", "{ output = 1 }")))
    cancel = threading.Event()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            run_suite(
                load_suite(module.root / "evals.toml"),
                RunOptions(
                    impl=f"{PYTHON} {script}",
                    kind="command-per-case",
                    timeout=30.0,
                    sandbox="off",  # the process writes its pid beside the suite
                ),
                cancel=cancel,
            )
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    deadline = time.monotonic() + 10
    while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    cancel.set()
    thread.join(10)
    assert len(errors) == 1 and isinstance(errors[0], RunCancelled)
    assert _gone(int(pidfile.read_text()))


# --------------------------------------------------- the schemas match the runner


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return loaded


_JSON_TYPES = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def valid(instance: Any, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    """A small JSON Schema check covering the keywords docs/protocol/ uses."""
    if "$ref" in schema:
        ref = schema["$ref"]
        file, _, pointer = ref.partition("#")
        document = _schema(file) if file else root
        target = document
        for part in filter(None, pointer.split("/")):
            target = target[part]
        if not valid(instance, target, document):
            return False
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_JSON_TYPES[k](instance) for k in kinds):
            return False
    if "const" in schema and not (
        instance == schema["const"] and type(instance) is type(schema["const"])
    ):
        return False
    if "enum" in schema and instance not in schema["enum"]:
        return False
    if (
        "pattern" in schema
        and isinstance(instance, str)
        and not re.search(schema["pattern"], instance)
    ):
        return False
    if "minLength" in schema and isinstance(instance, str) and len(instance) < schema["minLength"]:
        return False
    if "minimum" in schema and type(instance) is int and instance < schema["minimum"]:
        return False
    if type(instance) is dict:
        properties = schema.get("properties", {})
        if any(key not in instance for key in schema.get("required", ())):
            return False
        for key, item in instance.items():
            if key in properties:
                if not valid(item, properties[key], root):
                    return False
                continue
            extra = schema.get("additionalProperties", True)
            if extra is False or (isinstance(extra, dict) and not valid(item, extra, root)):
                return False
    if (
        type(instance) is list
        and "items" in schema
        and not all(valid(item, schema["items"], root) for item in instance)
    ):
        return False
    if "oneOf" in schema:
        return sum(valid(instance, option, root) for option in schema["oneOf"]) == 1
    return True


def check(instance: Any, name: str) -> bool:
    schema = _schema(name)
    return valid(instance, schema, schema)


def test_schema_files_are_json_with_ids() -> None:
    names = sorted(p.name for p in SCHEMAS.glob("*.schema.json"))
    assert names == [
        "per-case-result.schema.json",
        "result.schema.json",
        "run.schema.json",
        "start.schema.json",
        "started.schema.json",
        "stop.schema.json",
        "value.schema.json",
    ]
    for name in names:
        assert _schema(name)["$id"].endswith("/" + name)
        assert f"protocol/{name}" in (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")


def test_runner_messages_match_their_schemas(module: Module) -> None:
    module.suite(
        suite_text(
            (
                "typed",
                '{ a = 1, b = 1.0, c = true, d = "1", e = nan, '
                "f = 1979-05-27T07:32:00Z, g = 1979-05-27T07:32:00, "
                "h = 1979-05-27, i = 07:32:00, j = [[1], { k = -inf }] }",
                "{ output = 1 }",
            )
        )
    )
    case = load_suite(module.root / "evals.toml").cases[0]
    request = json.loads(run_request(7, Planned(case, dict(case.input), "call")))
    assert check(request, "run.schema.json")
    assert check(json.loads(protocol.start_request("calc")), "start.schema.json")
    assert check(json.loads(protocol.dumps({"op": "stop"})), "stop.schema.json")
    assert not check({**request, "seq": 0}, "run.schema.json")
    assert "protocol" not in request  # the harness agreed on it at start
    per_case = json.loads(run_request(7, Planned(case, dict(case.input), "call"), per_case=True))
    assert per_case["protocol"] == protocol.PROTOCOL_VERSION
    assert check(per_case, "run.schema.json")
    assert not check({**per_case, "protocol": 2}, "run.schema.json")
    decoded = decode_value(request["case"]["input"])
    assert math.isnan(decoded.pop("e"))
    assert decoded == {k: v for k, v in case.input.items() if k != "e"}
    assert [type(decoded[k]) for k in "abcd"] == [int, float, bool, str]


RESULT_EXAMPLES: list[tuple[dict[str, Any], bool]] = [
    ({"op": "result", "seq": 1, "observation": {"type": "integer", "value": "3"}}, True),
    ({"op": "result", "seq": 1, "observation": {"type": "float", "value": "-inf"}}, True),
    ({"op": "result", "seq": 1, "observation": {"type": "null"}}, True),
    ({"op": "result", "seq": 1, "error": {"type": "ValueError", "message": "m"}}, True),
    ({"op": "result", "seq": 1, "error": {"type": "E", "message": "m", "traceback": "t"}}, True),
    ({"op": "result", "seq": 1, "harness_error": {"message": "m"}}, True),
    ({"op": "result", "seq": 1}, False),
    (
        {
            "op": "result",
            "seq": 1,
            "observation": {"type": "null"},
            "error": {"type": "E", "message": "m"},
        },
        False,
    ),
    ({"op": "result", "observation": {"type": "null"}}, False),
    ({"op": "result", "seq": 1, "observation": {"type": "integer", "value": "1.0"}}, False),
    ({"op": "result", "seq": 1, "observation": {"type": "float", "value": "1_0"}}, False),
    ({"op": "result", "seq": 1, "observation": {"type": "bytes", "value": "AAE="}}, True),
    ({"op": "result", "seq": 1, "observation": 3}, False),
    ({"op": "result", "seq": 1, "error": {"type": "", "message": "m"}}, False),
    ({"op": "result", "seq": 1, "error": {"message": "m"}}, False),
    ({"op": "result", "seq": 1, "harness_error": {"message": "m", "x": 1}}, False),
    ({"op": "result", "seq": 1, "elapsed_ms": 3, "observation": {"type": "null"}}, False),
    ({"op": "answer", "seq": 1, "observation": {"type": "null"}}, False),
]


@pytest.mark.parametrize(("message", "accepted"), RESULT_EXAMPLES)
def test_result_schema_and_runner_agree(message: dict[str, Any], accepted: bool) -> None:
    assert check(message, "result.schema.json") is accepted
    try:
        outcome_from_result(parse_message(json.dumps(message).encode()), 1)
    except ProtocolError:
        runner_accepts = False
    else:
        runner_accepts = True
    assert runner_accepts is accepted


def _calc_requests() -> list[bytes]:
    suite = load_suite(CALC_SUITE)
    chosen = [c for c in suite.cases if c.category in ("interface", "failure-mode")][:8]
    chosen += [suite.case("integer-literal"), suite.case("true-division-fraction")]
    return [run_request(i, Planned(c, dict(c.input), "call")) for i, c in enumerate(chosen, 1)]


@pytest.mark.parametrize("language", ["python", pytest.param("node", marks=needs_node)])
def test_example_harness_traffic_matches_the_schemas(language: str) -> None:
    command = (
        [sys.executable, str(HARNESSES / "calc_harness.py")]
        if language == "python"
        else ["node", str(HARNESSES / "calc_harness.mjs")]
    )
    requests = _calc_requests()
    stdin = protocol.start_request("calc") + b"".join(requests) + b'{"op":"stop"}\n'
    done = subprocess.run(command, input=stdin, capture_output=True, timeout=30, check=True)
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1 + len(requests)
    assert check(json.loads(lines[0]), "started.schema.json")
    bodies = set()
    for seq, line in enumerate(lines[1:], 1):
        message = json.loads(line)
        assert check(message, "result.schema.json"), line
        assert message["seq"] == seq
        bodies.update(k for k in ("observation", "error") if k in message)
    assert bodies == {"observation", "error"}
    one = subprocess.run(
        [*command, "--per-case"], input=requests[-1], capture_output=True, timeout=30, check=True
    )
    reply = json.loads(one.stdout)
    assert check(reply, "per-case-result.schema.json")
    assert decode_value(reply["observation"]) == 3.5
    newer = json.dumps({**json.loads(requests[-1]), "protocol": 2}).encode() + b"\n"
    refused = subprocess.run([*command, "--per-case"], input=newer, capture_output=True, timeout=30)
    refusal = json.loads(refused.stdout)
    assert check(refusal, "per-case-result.schema.json")
    assert refusal["op"] == "refused" and refusal["protocol"] == 1


PER_CASE_RESULT_EXAMPLES: list[tuple[dict[str, Any], bool]] = [
    ({"observation": {"type": "integer", "value": "3"}}, True),
    ({"op": "result", "seq": 1, "error": {"type": "E", "message": "m"}}, True),
    ({"op": "refused", "protocol": 2}, True),
    ({"op": "refused", "seq": 1, "protocol": 2, "reason": "too new"}, True),
    ({"op": "refused", "protocol": "2"}, False),
    ({"op": "refused", "protocol": 2, "reason": 3}, False),
    ({"op": "refused", "protocol": 2, "extra": True}, False),
    ({"op": "refused"}, False),
    ({"refused": {"protocol": 2}}, False),
]


@pytest.mark.parametrize(("message", "accepted"), PER_CASE_RESULT_EXAMPLES)
def test_per_case_result_schema_and_runner_agree(message: dict[str, Any], accepted: bool) -> None:
    assert check(message, "per-case-result.schema.json") is accepted
    try:
        parsed = parse_message(json.dumps(message).encode())
        if protocol.refusal_of(parsed, 1) is None:
            outcome_from_result(parsed, 1, envelope_optional=True)
    except ProtocolError:
        runner_accepts = False
    else:
        runner_accepts = True
    assert runner_accepts is accepted


def test_protocol_doc_examples_parse() -> None:
    """Every JSON line shown in docs/protocol.md is valid JSON the schemas accept."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    seen = 0
    for block in blocks:
        for chunk in re.split(r"\n(?=\{)", block.strip()):
            message = json.loads(chunk)
            name = {
                "start": "start",
                "started": "started",
                "run": "run",
                "result": "result",
                "stop": "stop",
                "refused": "per-case-result",
            }[message["op"]]
            assert check(message, f"{name}.schema.json"), chunk
            seen += 1
    assert seen >= 7


@pytest.mark.parametrize("kind", ["command", "command-per-case"])
@pytest.mark.parametrize("mode", ["auto", "off"])
def test_a_script_that_is_not_executable_is_not_called_missing(
    tmp_path: Path, kind: str, mode: str
) -> None:
    """Under the sandbox a harness script without its execute bit was reported as "No
    such file or directory", and a per-case one as "no such executable"."""
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    script.chmod(0o644)
    (tmp_path / "evals.toml").write_text(single_case_suite("{ output = 1 }"), encoding="utf-8")
    result = run_suite(
        load_suite(tmp_path / "evals.toml"),
        RunOptions(impl=str(script), kind=kind, timeout=5.0, sandbox=mode),
    )
    (case,) = result.results
    assert case.status is Status.ERRORED
    said = " ".join([*result.notes, case.reason or ""])
    assert "No such file" not in said and "no such executable" not in said, said
    assert "Permission denied" in said or "it is not executable" in said, said

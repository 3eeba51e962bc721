"""Every failed or errored result carries its fail class (docs/execution-model.md#fail-
classes), decided by the supervisor from what it saw, on every surface: the JSON
document, its lines, the manifest, JUnit, the history and ``cer diff``; a pass or a skip
carries none, and a document or history from before classes were still reads."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

import support
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.history.database import History
from cer.judge.verdict import Outcome, judge
from cer.model import FAIL_CLASSES, Case, RunResult, Status
from cer.reports import ReportContext, render_report
from cer.reports.manifest import manifest_document
from cer.reports.text import render_case_history, render_diff
from cer.results import jsonlines, serialize
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from reports.test_reports import validate_json

CASES = {
    "mismatch": ('{ mode = "ok", x = 1 }', "{ output = 2 }"),
    "raised": ('{ mode = "raise", x = 1 }', "{ output = 1 }"),
    "timed_out": ('{ mode = "sleep", x = 1 }', "{ output = 1 }"),
    "crashed": ('{ mode = "kill", x = 1 }', "{ output = 1 }"),
    "exited": ('{ mode = "exit", x = 1 }', "{ output = 1 }"),
    "not_plain": ('{ mode = "object", x = 1 }', "{ output = 1 }"),
    "signature": ("{ nope = 1 }", "{ output = 1 }"),
    "unverifiable": ('{ mode = "ok", x = 1 }', "{ parse_time_ms_max = 5 }"),
    "passes": ('{ mode = "ok", x = 1 }', "{ output = 1 }"),
    "skipped": ('{ mode = "ok", x = 1 }', "{ output = 1 }"),
}
"""Each case named after the class it must get (``passes`` and ``skipped``: none)."""

IMPL = """\
import os, signal, time


def f(mode, x):
    if mode == "raise":
        raise ValueError("no")
    if mode == "sleep":
        time.sleep(10)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "exit":
        os._exit(3)
    if mode == "object":
        return object()
    return x
"""


def _suite_text() -> str:
    lines = ['commonsformat_evals = "0.2"', 'target = "t"', ""]
    for name, (given, expect) in CASES.items():
        category = "unsupported" if name == "skipped" else "functional"
        lines += ["[[cases]]", f'name = "{name}"', f'category = "{category}"']
        lines += [f"input = {given}", f"expect = {expect}", ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("classes")
    (root / "evals.toml").write_text(_suite_text(), encoding="utf-8")
    (root / "impl.py").write_text(IMPL, encoding="utf-8")
    return root


@pytest.fixture(scope="module", params=["fork", "none"])
def run(request: pytest.FixtureRequest, module: Path) -> RunResult:
    """One run of every case, shared by the module's tests (about a second and a half
    under ``none``, whose worker is restarted after each case that ends it); the timeout
    is short, for the case that sleeps."""
    options = RunOptions("impl:f", paths=(str(module),), timeout=0.5, isolation=request.param)
    return run_suite(load_suite(module / "evals.toml"), options)


def _expected(name: str) -> str | None:
    return None if name in ("passes", "skipped") else name


def test_each_failure_carries_the_class_the_supervisor_saw(run: RunResult) -> None:
    found = {result.case_name: result.fail_class for result in run.results}
    assert found == {name: _expected(name) for name in CASES}
    assert run.result("passes").status is Status.PASS
    assert run.result("skipped").status is Status.SKIPPED


def test_json_lines_and_manifest_carry_the_class(run: RunResult, module: Path) -> None:
    document = serialize.run_to_dict(run)
    assert {r["case_name"]: r["fail_class"] for r in document["results"]} == {
        name: _expected(name) for name in CASES
    }
    assert validate_json(document, "results.schema.json") == []
    back = serialize.run_from_dict(json.loads(json.dumps(document)))
    assert [r.fail_class for r in back.results] == [r.fail_class for r in run.results]
    suite = load_suite(module / "evals.toml")
    manifest = manifest_document(ReportContext(run, suite))
    assert {a["id"]: a["fail_class"] for a in manifest["assertions"]} == {
        name: _expected(name) for name in CASES
    }
    assert validate_json(manifest, "manifest.schema.json") == []
    lines: list[bytes] = []
    writer = jsonlines.LineWriter(lines.append, suite)
    from cer.events import CaseFinished

    for index, result in enumerate(run.results, 1):
        writer(CaseFinished(result, index, len(run.results)))
    records = [json.loads(line) for line in b"".join(lines).splitlines()]
    results = {r["case_name"]: r["fail_class"] for r in records if r.get("type") == "result"}
    assert results == {name: _expected(name) for name in CASES}


def test_junit_names_the_class_as_the_type(run: RunResult, module: Path) -> None:
    root = ET.fromstring(
        render_report("junit", ReportContext(run, load_suite(module / "evals.toml")))
    )
    types = {}
    for case in root.iter("testcase"):
        for tag in ("failure", "error"):
            element = case.find(tag)
            if element is not None:
                types[case.get("name")] = element.get("type")
    assert types == {name: name for name in CASES if _expected(name)}
    assert root.find(".//testcase[@name='mismatch']/failure") is not None


def test_the_history_keeps_the_class(run: RunResult, tmp_path: Path) -> None:
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(run)
        loaded = history.load_run(run.run_id)
        assert [r.fail_class for r in loaded.results] == [r.fail_class for r in run.results]
        assert history.fail_classes(run.run_id) == {name: name for name in CASES if _expected(name)}
        (entry,) = history.case_history("crashed")
        assert entry.fail_class == "crashed"
        assert history.case_history("passes")[0].fail_class is None
    text = render_case_history("crashed", [entry], "h.sqlite")
    assert "‼ ERROR (crashed)" in text


def test_a_command_that_exits_or_prints_nonsense(module: Path) -> None:
    suite = load_suite(module / "evals.toml")
    only = Selection(names=frozenset({"passes"}))
    for command, wanted in (('sh -c "exit 3"', "exited"), ('sh -c "echo nonsense"', "lost")):
        options = RunOptions(
            command, kind="command-per-case", timeout=5.0, sandbox="off", selection=only
        )
        result = run_suite(suite, options).result("passes")
        assert (result.status, result.fail_class) == (Status.ERRORED, wanted), result.reason


def test_a_case_never_run_is_not_run(module: Path, tmp_path: Path) -> None:
    suite = load_suite(module / "evals.toml")
    run = run_suite(suite, RunOptions("no_such_module_here:f", timeout=5.0))
    found = {r.case_name: r.fail_class for r in run.results if r.status is Status.ERRORED}
    # Decided before anything runs: what it asks cannot be verified, loaded or not.
    assert found.pop("unverifiable") == "unverifiable"
    assert set(found.values()) == {"not_run"} and "passes" in found
    document = serialize.run_to_dict(run)
    assert {r["fail_class"] for r in document["results"] if r["case_name"] == "passes"} == {
        "not_run"
    }
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(run)
        assert history.fail_classes(run.run_id)["passes"] == "not_run"


def _case(expect: dict[str, object]) -> Case:
    return Case("c", "functional", "functional", 1, 1, {}, expect)


@pytest.mark.parametrize(
    ("expect", "outcome", "status", "wanted"),
    [
        # How the case ended is its class when it did not answer, even when compared.
        ({"hung": False}, Outcome("timed_out", detail="t"), Status.FAIL, "timed_out"),
        ({"crashed": False}, Outcome("crashed", detail="c", seen=True), Status.FAIL, "crashed"),
        (
            {"crashed": False},
            Outcome("crashed", detail="c", seen=True, fail_class="exited"),
            Status.FAIL,
            "exited",
        ),
        # A rejection compared and not met is a mismatch; one no expectation covers is raised.
        (
            {"rejects": True, "error_type": "KeyError"},
            Outcome("raised", error_type="ValueError", error_message="m"),
            Status.FAIL,
            "mismatch",
        ),
        (
            {"output": 1},
            Outcome("raised", error_type="E", error_message="m"),
            Status.ERRORED,
            "raised",
        ),
        ({"rejects": True}, Outcome("returned", value={"error": "no"}), Status.FAIL, "mismatch"),
        # What the implementation reports for the runner, or a crash it only reported.
        (
            {"output": 1},
            Outcome("returned", value={"elapsed_ms": 1}),
            Status.ERRORED,
            "unverifiable",
        ),
        ({"crashed": True}, Outcome("crashed", detail="c"), Status.ERRORED, "unverifiable"),
        ({"output": 1}, Outcome("lost", detail="l"), Status.ERRORED, "lost"),
        # An outcome made over into a timeout (a late answer) is a timeout, whatever
        # class the answer it replaced had.
        (
            {"output": 1},
            replace(Outcome("crashed", detail="c", fail_class="exited"), kind="timed_out"),
            Status.ERRORED,
            "timed_out",
        ),
        ({"output": 1}, Outcome("returned", value=1), Status.PASS, None),
    ],
)
def test_the_judge_decides_the_class(
    expect: dict[str, object], outcome: Outcome, status: Status, wanted: str | None
) -> None:
    result = judge(_case(expect), outcome)
    assert (result.status, result.fail_class) == (status, wanted), result.reason


def test_every_class_is_documented() -> None:
    root = support.ROOT
    page = (root / "docs" / "execution-model.md").read_text(encoding="utf-8")
    schema = json.loads((root / "docs" / "results.schema.json").read_text(encoding="utf-8"))
    listed = schema["$defs"]["result"]["properties"]["fail_class"]["enum"]
    assert listed == [*FAIL_CLASSES, None]
    for name in FAIL_CLASSES:
        assert f"`{name}`" in page, name


def test_documents_and_histories_from_before_classes_still_read(
    run: RunResult, tmp_path: Path
) -> None:
    document = serialize.run_to_dict(run)
    for item in document["results"]:
        del item["fail_class"]
    assert {r.fail_class for r in serialize.run_from_dict(document).results} == {None}
    path = tmp_path / "old.sqlite"
    History.open(path).close()
    with sqlite3.connect(path) as db:  # a history of version 4, before classes were kept
        db.execute("DROP TABLE cer_case_fail_classes")
        db.execute("DROP TABLE cer_run_conditions_full")
        db.execute("UPDATE cer_meta SET value = '4' WHERE key = 'history_version'")
    with History.open(path) as history:
        history.record(run)
        assert history.fail_classes(run.run_id)["timed_out"] == "timed_out"


def test_cer_diff_shows_a_change_of_class(run: RunResult, tmp_path: Path) -> None:
    before = run
    changed = [
        replace(r, fail_class="timed_out", reason="timed out after 0.5 s")
        if r.case_name == "mismatch"
        else r
        for r in run.results
    ]
    after = replace(run, run_id="later", results=tuple(changed))
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(before)
        history.record(after)
        diff = history.diff(before.run_id, "later")
        records = {record.run_id: record for record in history.runs()}
    (change,) = diff.changed
    assert (change.case_name, change.before, change.after) == ("mismatch", "fail", "fail")
    assert (change.before_class, change.after_class) == ("mismatch", "timed_out")
    text = render_diff(diff, records[before.run_id], records["later"])
    assert "mismatch  fail (mismatch) → fail (timed_out)" in text
    assert diff.unchanged == len(CASES) - 1


def test_cer_tui_keeps_the_class_with_the_row(run: RunResult) -> None:
    from cer.tui.state.kept import KeptResult

    timed_out = run.result("timed_out")
    for kept in (KeptResult.of(timed_out), KeptResult.whole_of(timed_out)):
        assert kept.result().fail_class == "timed_out"
        assert kept.bare().fail_class == "timed_out"


def test_a_history_edited_to_hold_other_words_gives_none_back(
    run: RunResult, tmp_path: Path
) -> None:
    path = tmp_path / "h.sqlite"
    with History.open(path) as history:
        history.record(run)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE cer_case_fail_classes SET fail_class = 'passed\x1b[32m'")
    with History.open(path) as history:
        assert history.fail_classes(run.run_id) == {}
        assert {r.fail_class for r in history.load_run(run.run_id).results} == {None}
        assert {e.fail_class for e in history.case_history("crashed")} == {None}


@pytest.mark.parametrize(
    ("bad", "wanted"),
    [
        ("crash", "exited"),  # the harness exited with status 3 while running the case
        ("exit-quietly", "exited"),
        ("garbage", "lost"),
        ("twice", "lost"),
        ("harness-error", "lost"),
    ],
)
def test_a_harness_that_misbehaves_gets_the_class_of_what_it_did(
    tmp_path: Path, bad: str, wanted: str
) -> None:
    from engine.command.test_backend import BROKEN, PYTHON, around, run_command

    harness = tmp_path / "broken_harness.py"
    harness.write_text(BROKEN, encoding="utf-8")
    (tmp_path / "evals.toml").write_text(around(bad), encoding="utf-8")
    run = run_command(tmp_path / "evals.toml", f"{PYTHON} {harness}", timeout=5.0, sandbox="off")
    assert [(r.case_name, r.fail_class) for r in run.results] == [
        ("before", None),
        (bad, wanted),
        ("after", None),
    ]

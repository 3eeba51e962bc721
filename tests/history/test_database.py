"""The run history: atomic runs, concurrent writers, and the questions asked of it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import support
from cer import resources
from cer.engine.options import OTHER_SHARD
from cer.history import database as history_module
from cer.history import schema as history_schema
from cer.history.database import History, default_history_path
from cer.history.records import HistoryError, HistoryUntrusted, diff_statuses
from cer.model import CaseResult, Mismatch, RunResult, Status
from cer.suite.loader import load_suite
from support import Module

SRC = str(support.ROOT / "src")

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "doubles-two"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "doubles-three"
category = "functional"
input = { x = 3 }
expect = { output = 6 }

[[adversarial]]
name = "odd-category"
category = "no-such-category"
input = { x = 1 }
expect = { output = 2 }
"""


def make_run(
    run_id: str,
    cases: list[tuple[str, Status]] | list[tuple[str, Status, str | None]],
    *,
    impl: str = "impl:f@aaaa",
    suite_hash: str = "h1",
    suite_path: str = "/m/evals.toml",
    at: int = 1000,
) -> RunResult:
    """A run built by hand: (name, status[, reason]) per case, in declared order."""
    results = []
    for position, item in enumerate(cases, start=1):
        name, status = item[0], item[1]
        reason = item[2] if len(item) > 2 else (None if status is Status.PASS else "why")
        results.append(
            CaseResult(
                name, "functional", "functional", status, reason, position=position, elapsed_ms=1
            )
        )
    return RunResult(
        run_id,
        "demo",
        impl,
        at,
        at + 10,
        tuple(results),
        suite_path=suite_path,
        suite_hash=suite_hash,
        format_version="0.2",
        implementation=impl.split("@")[0],
    )


@pytest.fixture
def history(tmp_path: Path) -> Iterator[History]:
    opened = History.open(tmp_path / ".cer" / "history.sqlite")
    yield opened
    opened.close()


def table_counts(path: Path, run_id: str) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return {
            table: db.execute(
                f"SELECT COUNT(*) FROM {table} WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            for table in (
                "eval_runs",
                "eval_case_results",
                "eval_run_summary",
                "cer_runs",
                "cer_case_details",
            )
        }


# --- the database ---------------------------------------------------------------------


def test_tables_come_from_schema_sql_and_wal_is_on(history: History) -> None:
    schema = resources.schema_sql()
    assert "CREATE TABLE IF NOT EXISTS eval_runs" in schema
    with sqlite3.connect(history.path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        mode = db.execute("PRAGMA journal_mode").fetchone()[0]
        columns = [row[1] for row in db.execute("PRAGMA table_info(eval_case_results)")]
    assert {
        "eval_runs",
        "eval_case_results",
        "eval_run_summary",
        "cer_runs",
        "cer_case_details",
    } <= tables
    assert mode == "wal"
    assert columns == [
        "run_id",
        "case_name",
        "case_class",
        "category",
        "status",
        "reason",
        "captured_output",
        "elapsed_ms",
    ]


def test_schema_sql_is_found_installed_or_in_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cer

    assert resources.schema_sql_path() == Path(cer.__file__).resolve().parents[2] / "schema.sql"
    package = tmp_path / "site-packages" / "cer"
    (package / "data").mkdir(parents=True)
    (package / "data" / "schema.sql").write_text("-- installed copy\n")
    monkeypatch.setattr(cer, "__file__", str(package / "__init__.py"))
    assert resources.schema_sql() == "-- installed copy\n"  # a wheel's cer/data/ wins
    (package / "data" / "schema.sql").unlink()
    with pytest.raises(resources.ResourceMissing, match=r"schema\.sql"):
        resources.schema_sql_path()


def test_default_location_is_beside_the_suite() -> None:
    assert default_history_path("/a/b/evals.toml") == Path("/a/b/.cer/history.sqlite")


def test_two_real_runs_make_two_rows_with_consistent_summaries(
    module: Module, history: History
) -> None:
    module.suite(SUITE)
    impl = module.impl("def f(x):\n    print('seen', x)\n    return x * 2 if x == 2 else 0\n")
    suite = load_suite(module.root / "evals.toml")
    first = module.run(f"{impl}:f")
    second = module.run(f"{impl}:f")
    history.record(first, suite)
    history.record(second, suite)
    with sqlite3.connect(history.path) as db:
        assert db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 2
        for run in (first, second):
            stored = db.execute(
                "SELECT cases_total, cases_passed, cases_failed, cases_skipped, cases_errored"
                " FROM eval_run_summary WHERE run_id = ?",
                (run.run_id,),
            ).fetchone()
            counted = db.execute(
                "SELECT COUNT(*), SUM(status = 'pass'), SUM(status = 'fail'),"
                " SUM(status = 'skipped'), SUM(status = 'errored')"
                " FROM eval_case_results WHERE run_id = ?",
                (run.run_id,),
            ).fetchone()
            s = run.summary
            assert stored == counted == (s.total, s.passed, s.failed, s.skipped, s.errored)
            assert stored == (3, 1, 1, 1, 0)
        expected = db.execute(
            "SELECT expected FROM cer_case_details WHERE case_name = 'doubles-three'"
        ).fetchone()[0]
        assert expected == '{"output":6}'
    listed = history.runs()
    assert [r.run_id for r in listed] == [second.run_id, first.run_id]
    assert listed[0].summary == second.summary
    assert listed[0].suite_hash == suite.content_hash


def test_a_recorded_run_reads_back_whole(history: History) -> None:
    run = RunResult(
        "r1",
        "demo",
        "impl:f@aaaa",
        5,
        9,
        (
            CaseResult(
                "a",
                "functional",
                "functional",
                Status.FAIL,
                "value differs",
                stdout="out\n",
                stderr="err",
                elapsed_ms=3,
                observation={"value": 1.5, "nan": float("nan"), "items": [1, "x"]},
                mismatches=(Mismatch("value", "value: expected 2, observed 1.5", 2, 1.5),),
                position=1,
            ),
            CaseResult(
                "b",
                "adversarial",
                "input-validation",
                Status.ERRORED,
                "boom",
                traceback="Traceback ...",
                position=2,
            ),
        ),
        suite_path="/m/evals.toml",
        suite_hash="h",
        format_version="0.2",
        implementation="impl:f",
        notes=("a note",),
    )
    history.record(run)
    back = history.load_run("r1")
    assert back.results[1] == run.results[1]
    assert back.results[0].observation is not None
    assert back.results[0].mismatches == run.results[0].mismatches
    assert back.results[0].stdout == "out\n" and back.notes == ("a note",)
    assert back.summary == run.summary
    with sqlite3.connect(history.path) as db:
        captured = db.execute(
            "SELECT captured_output FROM eval_case_results WHERE case_name = 'a'"
        ).fetchone()[0]
    assert captured.decode() == run.results[0].captured_output


def test_recording_a_run_twice_is_refused_and_changes_nothing(history: History) -> None:
    run = make_run("dup", [("a", Status.PASS)])
    history.record(run)
    with pytest.raises(HistoryError):
        history.record(run)
    assert table_counts(history.path, "dup") == dict.fromkeys(
        ("eval_runs", "eval_case_results", "eval_run_summary", "cer_runs", "cer_case_details"), 1
    )


def test_a_failure_inside_the_transaction_leaves_no_trace(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    history.record(make_run("kept", [("a", Status.PASS)]))
    original = History._write

    def write_then_fail(self: History, *args: object) -> None:
        original(self, *args)  # type: ignore[arg-type]
        raise sqlite3.OperationalError("disk I/O error (simulated after every insert)")

    monkeypatch.setattr(History, "_write", write_then_fail)
    with pytest.raises(HistoryError):
        history.record(make_run("lost", [("a", Status.FAIL), ("b", Status.PASS)]))
    assert set(table_counts(history.path, "lost").values()) == {0}
    assert [r.run_id for r in history.runs()] == ["kept"]


KILLED_WRITER = """
import sys, time
from cer.history.database import History
from cer.model import CaseResult, RunResult, Status

def run(run_id, n):
    results = tuple(CaseResult(f"c{i}", "functional", "functional", Status.PASS, position=i)
                    for i in range(1, n + 1))
    return RunResult(run_id, "demo", "impl:f@a", 1, 2, results, suite_path="/m/evals.toml",
                     suite_hash="h")

history = History.open(sys.argv[1])
history.record(run("complete", 50))
original = History._write

def write_and_hang(self, *args):
    original(self, *args)  # every row of the run is written, nothing is committed
    print("inside the transaction", flush=True)
    time.sleep(60)

History._write = write_and_hang
history.record(run("killed", 500))
"""


def test_a_process_killed_mid_transaction_leaves_a_valid_database_without_its_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.sqlite"
    env = {**os.environ, "PYTHONPATH": SRC}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "inside the transaction"
        with sqlite3.connect(path, timeout=0.1) as peek:  # WAL: readers see committed data
            assert peek.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 1
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert set(table_counts(path, "killed").values()) == {0}
    with History.open(path) as history:
        assert [r.run_id for r in history.runs()] == ["complete"]
        history.record(make_run("after", [("a", Status.PASS)]))  # still writable
        assert len(history.runs()) == 2


CONCURRENT_WRITER = """
import os, sys, time
from cer.history.database import History
from cer.model import CaseResult, RunResult, Status

path, tag, go = sys.argv[1], sys.argv[2], sys.argv[3]
while not os.path.exists(go):
    time.sleep(0.001)
history = History.open(path)
for n in range(15):
    results = tuple(
        CaseResult(f"c{i}", "functional", "functional", Status.PASS, position=i,
                   stdout="x" * 200)
        for i in range(1, 201)
    )
    history.record(RunResult(f"{tag}-{n}", "demo", f"impl:{tag}@a", n, n + 1, results,
                             suite_path="/m/evals.toml", suite_hash="h"))
print("done", flush=True)
"""


def test_two_processes_recording_at_once_both_land(tmp_path: Path) -> None:
    path = tmp_path / "fresh" / "history.sqlite"  # both also race to create it
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": SRC}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_WRITER, str(path), tag, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for tag in ("left", "right")
    ]
    time.sleep(0.3)
    go.touch()
    outputs = [child.communicate(timeout=60) for child in children]
    for child, (out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
        assert out.strip() == "done"
    with History.open(path) as history:
        runs = history.runs(None)
    assert len(runs) == 30
    assert {r.run_id.split("-")[0] for r in runs} == {"left", "right"}
    assert all(r.summary.total == r.summary.passed == 200 for r in runs)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM eval_case_results").fetchone()[0] == 6000


def test_a_large_run_is_recorded_whole(history: History) -> None:
    run = make_run("big", [(f"case-{i}", Status.PASS) for i in range(3000)])
    history.record(run)
    assert history.runs(None)[0].summary.total == 3000


# --- unusable files -------------------------------------------------------------------


def test_a_corrupt_file_is_a_history_error(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    path.write_bytes(b"this is not a database, just some bytes" * 100)
    with pytest.raises(HistoryError, match=r"history\.sqlite"):
        History.open(path)


def test_a_folder_in_the_way_is_a_history_error(tmp_path: Path) -> None:
    (tmp_path / "history.sqlite").mkdir()
    with pytest.raises(HistoryError):
        History.open(tmp_path / "history.sqlite")


def test_a_newer_history_is_refused_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    History.open(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE cer_meta SET value = '99' WHERE key = 'history_version'")
    with pytest.raises(HistoryError, match="newer"):
        History.open(path)


def test_reading_a_missing_history_does_not_create_it(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no history"):
        History.open(tmp_path / "none.sqlite", create=False)
    assert not (tmp_path / "none.sqlite").exists()


# --- diff -----------------------------------------------------------------------------


def test_diff_on_a_constructed_history(history: History) -> None:
    before = make_run(
        "before",
        [
            ("stays-pass", Status.PASS),
            ("regresses", Status.PASS),
            ("errs-now", Status.PASS),
            ("gets-fixed", Status.FAIL),
            ("error-fixed", Status.ERRORED),
            ("deselected-now", Status.FAIL),
            ("fail-to-error", Status.FAIL),
            ("removed", Status.FAIL),
        ],
        at=1000,
    )
    after = make_run(
        "after",
        [
            ("stays-pass", Status.PASS),
            ("regresses", Status.FAIL),
            ("errs-now", Status.ERRORED),
            ("gets-fixed", Status.PASS),
            ("error-fixed", Status.PASS),
            ("deselected-now", Status.SKIPPED, "deselected"),
            ("fail-to-error", Status.ERRORED),
            ("brand-new", Status.FAIL),
        ],
        at=2000,
    )
    history.record(after)
    history.record(before)  # recorded out of order: time decides which is newer
    assert [r.run_id for r in history.runs()] == ["after", "before"]
    diff = history.diff("before", "after")
    assert [(c.case_name, c.before, c.after) for c in diff.regressions] == [
        ("regresses", "pass", "fail"),
        ("errs-now", "pass", "errored"),
    ]
    assert [c.case_name for c in diff.fixes] == ["gets-fixed", "error-fixed"]
    assert [(c.case_name, c.after) for c in diff.changed] == [
        ("deselected-now", "skipped"),
        ("fail-to-error", "errored"),
    ]
    assert [(c.case_name, c.after) for c in diff.new] == [("brand-new", "fail")]
    assert [(c.case_name, c.before) for c in diff.removed] == [("removed", "fail")]
    assert diff.unchanged == 1
    backwards = history.diff("after", "before")
    assert [c.case_name for c in backwards.regressions] == ["gets-fixed", "error-fixed"]
    assert diff_statuses([("a", "pass", None)], [("a", "pass", None)]).is_empty


def test_runs_are_named_by_index_or_id_prefix(history: History) -> None:
    history.record(make_run("aaaaa111", [("a", Status.PASS)], at=1))
    history.record(make_run("aaaaa222", [("a", Status.PASS)], at=2))
    history.record(make_run("bbbbb333", [("a", Status.PASS)], at=3))
    assert history.run("1").run_id == "bbbbb333"
    assert history.run("3").run_id == "aaaaa111"
    assert history.run("aaaaa2").run_id == "aaaaa222"
    with pytest.raises(HistoryError, match="more than one"):
        history.run("aaaaa")
    with pytest.raises(HistoryError, match="at least"):
        history.run("bbb")
    with pytest.raises(HistoryError, match="no run #9"):
        history.run("9")
    with pytest.raises(HistoryError, match="no recorded run"):
        history.run("ccccc")


# --- flaky, rerun-failed, case history -------------------------------------------------


def test_flaky_needs_the_same_implementation_and_suite(history: History) -> None:
    history.record(
        make_run(
            "1",
            [("wobbly", Status.PASS), ("steady", Status.PASS), ("sometimes-off", Status.PASS)],
            at=1,
        )
    )
    history.record(
        make_run(
            "2",
            [
                ("wobbly", Status.FAIL),
                ("steady", Status.PASS),
                ("sometimes-off", Status.SKIPPED, "deselected"),
            ],
            at=2,
        )
    )
    # a shard that left a case to another shard says nothing about it either
    history.record(make_run("2b", [("steady", Status.SKIPPED, OTHER_SHARD)], at=2))
    # a different implementation or a different suite never makes a case flaky
    history.record(make_run("3", [("steady", Status.FAIL)], impl="impl:f@bbbb", at=3))
    history.record(make_run("4", [("steady", Status.ERRORED)], suite_hash="h2", at=4))
    found = history.flaky()
    assert [(f.case_name, f.implementation_id, f.suite_hash) for f in found] == [
        ("wobbly", "impl:f@aaaa", "h1")
    ]
    assert found[0].statuses == (("fail", 1), ("pass", 1))
    assert history.flaky_names("impl:f@aaaa", "h1") == frozenset({"wobbly"})
    assert history.flaky_names("impl:f@bbbb", "h1") == frozenset()
    records = {r.run_id: r for r in history.runs()}
    assert records["2"].flaky == ("wobbly",) and records["3"].flaky == ()
    entries = history.case_history("wobbly")
    assert [(e.run_id, e.status, e.flaky) for e in entries] == [
        ("2", "fail", True),
        ("1", "pass", True),
    ]
    assert [e.flaky for e in history.case_history("steady")] == [False] * 5


def test_latest_failed_is_taken_from_the_newest_run_of_the_suite(history: History) -> None:
    assert history.latest_failed(suite_path="/m/evals.toml") is None
    history.record(make_run("old", [("a", Status.FAIL), ("b", Status.PASS)], at=1))
    history.record(
        make_run(
            "new",
            [("a", Status.PASS), ("b", Status.ERRORED), ("c", Status.FAIL), ("d", Status.SKIPPED)],
            at=2,
        )
    )
    history.record(
        make_run(
            "other", [("z", Status.FAIL)], suite_path="/other/evals.toml", suite_hash="h9", at=3
        )
    )
    latest = history.latest_failed(suite_path="/m/evals.toml")
    assert latest is not None
    assert (latest.run_id, latest.names) == ("new", ("b", "c"))
    by_hash = history.latest_failed(suite_hash="h9")
    assert by_hash is not None and by_hash.names == ("z",)
    assert [r.run_id for r in history.runs(suite_path="/other/evals.toml")] == ["other"]
    assert history.latest_failed(suite_path="/nowhere/evals.toml") is None


def test_suite_paths_match_however_they_are_spelt(
    history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    history.record(make_run("rel", [("a", Status.FAIL)], suite_path="mod/evals.toml"))
    latest = history.latest_failed(suite_path=tmp_path / "mod" / "evals.toml")
    assert latest is not None and latest.run_id == "rel"
    assert history.runs()[0].suite_path == "mod/evals.toml"  # kept as the run named it


def test_only_the_newest_runs_of_a_suite_are_kept(
    history: History, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cer.results.conformance import Conformance

    monkeypatch.setattr(history_module, "KEEP_RUNS", 3)
    ids = [f"run-{i}" for i in range(5)]
    for index, run_id in enumerate(ids):
        run = make_run(run_id, [("a", Status.PASS)], at=1000 + index * 100)
        history.record(run, verdict=Conformance("conformant"))
    history.record(make_run("other", [("a", Status.PASS)], suite_path="/n/evals.toml"))
    assert [r.run_id for r in history.runs(None, suite_path="/m/evals.toml")] == ids[:1:-1]
    assert [r.run_id for r in history.runs(None, suite_path="/n/evals.toml")] == ["other"]
    with sqlite3.connect(history.path) as db:
        left = db.execute(
            "SELECT COUNT(*) FROM eval_case_results WHERE run_id IN (?, ?)", ids[:2]
        ).fetchone()[0]
        stated = db.execute("SELECT COUNT(*) FROM cer_run_verdict").fetchone()[0]
    assert left == 0
    assert stated == 3  # a forgotten run's verdict goes with it


# --- a database cer did not make -------------------------------------------------------


def _made(tmp_path: Path) -> Path:
    """A history cer made, holding one recorded run."""
    path = tmp_path / "h.sqlite"
    with History.open(path) as history:
        history.record(make_run("r1", [("a", Status.FAIL), ("b", Status.PASS)]))
    return path


def _tamper(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    try:
        for statement in statements:
            db.execute(statement)
        db.commit()
    finally:
        db.close()


TAMPERS = {
    "trigger": (
        "CREATE TRIGGER all_pass AFTER INSERT ON eval_case_results BEGIN "
        "UPDATE eval_case_results SET status = 'pass' WHERE run_id = NEW.run_id; END",
        "trigger 'all_pass' on eval_case_results that cer never creates",
    ),
    "view": (
        "CREATE VIEW nothing_failed AS SELECT * FROM eval_runs",
        "view 'nothing_failed' that cer never creates",
    ),
    "altered table": (
        "ALTER TABLE eval_case_results ADD COLUMN status_override TEXT",
        "table 'eval_case_results' is not declared the way cer declares it",
    ),
    "extra index": (
        "CREATE INDEX sneaky ON eval_runs (target_module)",
        "index 'sneaky' on eval_runs that cer never creates",
    ),
    "verdict trigger": (
        "CREATE TRIGGER say_conformant AFTER INSERT ON cer_run_verdict BEGIN "
        "UPDATE cer_run_verdict SET statement = 'conformant' WHERE run_id = NEW.run_id; END",
        "trigger 'say_conformant' on cer_run_verdict that cer never creates",
    ),
    "application id": (
        "PRAGMA application_id = 1234",
        "it belongs to another application (application_id 1234)",
    ),
}


@pytest.mark.parametrize("kind", list(TAMPERS))
def test_a_tampered_history_is_refused_on_opening(tmp_path: Path, kind: str) -> None:
    path = _made(tmp_path)
    statement, found = TAMPERS[kind]
    _tamper(path, statement)
    before = path.read_bytes()
    with pytest.raises(HistoryUntrusted) as info:
        History.open(path)
    message = str(info.value)
    assert message.startswith(f"{path} is not a history cer made: ")
    assert found in message
    assert f"mv {path} {path}.suspect" in message
    assert isinstance(info.value, HistoryError)
    assert path.read_bytes() == before  # neither repaired nor written


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    _tamper(path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    with pytest.raises(HistoryUntrusted, match="table 'notes' that cer never creates"):
        History.open(path)
    with pytest.raises(HistoryUntrusted):
        History.open(path, create=False)


def test_a_database_with_only_the_schema_tables_is_completed(tmp_path: Path) -> None:
    path = tmp_path / "spec.sqlite"
    db = sqlite3.connect(path)
    db.executescript(resources.schema_sql())
    db.close()
    with History.open(path) as history:
        history.record(make_run("r1", [("a", Status.PASS)]))
        assert [r.run_id for r in history.runs()] == ["r1"]
    with History.open(path) as history:  # made by cer now, and accepted again
        assert history.latest_failed() is not None
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA application_id").fetchone()[0] == history_module.APPLICATION_ID
    db.close()


def test_a_trigger_added_while_open_is_refused_before_recording(tmp_path: Path) -> None:
    path = _made(tmp_path)
    with History.open(path) as history:
        _tamper(path, TAMPERS["trigger"][0])
        with pytest.raises(HistoryUntrusted):
            history.record(make_run("r2", [("a", Status.FAIL), ("b", Status.FAIL)]))
        with pytest.raises(HistoryUntrusted):
            history.latest_failed()
        with pytest.raises(HistoryUntrusted):
            history.flaky_names("impl:f@aaaa", "h1")
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 1
    db.close()


def test_warming_up_makes_the_log_before_recording_and_changes_nothing(tmp_path: Path) -> None:
    path = _made(tmp_path)
    wal = Path(f"{path}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # the last close removed it
    with History.open(path) as history:
        history.warm_up()
        history._warmed()
        assert wal.stat().st_size > 0  # made by the warm-up, not by a recording
        history.record(make_run("r2", [("a", Status.PASS), ("b", Status.FAIL)]))
        assert [record.run_id for record in history.runs()] == ["r2", "r1"]
    with History.open(path, create=False) as history:
        history.warm_up()
        history.close()  # waits for the warm-up: the file is written whole
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_a_warm_up_does_not_wait_for_another_writer(tmp_path: Path) -> None:
    path = _made(tmp_path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process is writing, for a long time
    try:
        with History.open(path, timeout=120) as history:
            history.warm_up()
            warming = history._warming
            assert warming is not None
            warming.join(60)
            assert not warming.is_alive()  # gave up at once, not after the busy timeout
            assert history.timeout == 120
            assert history._db.execute("PRAGMA busy_timeout").fetchone()[0] == 120_000
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_warm_up_on_a_tampered_history_leaves_the_refusal_to_recording(
    tmp_path: Path,
) -> None:
    path = _made(tmp_path)
    with History.open(path) as history:
        _tamper(path, TAMPERS["trigger"][0])
        history.warm_up()
        history._warmed()
        with pytest.raises(HistoryUntrusted):
            history.record(make_run("r2", [("a", Status.FAIL), ("b", Status.FAIL)]))
    db = sqlite3.connect(path)
    assert db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 1
    db.close()


def test_layout_of_a_declaration_does_not_matter(tmp_path: Path) -> None:
    path = _made(tmp_path)
    declared = history_schema.normal_sql
    assert declared("CREATE TABLE t (\n  a TEXT, -- note\n  b INT\n)") == declared(
        "CREATE TABLE t(a TEXT,b INT)"
    )
    assert declared("CREATE TABLE t (a TEXT)") != declared("CREATE TABLE t (a TEXT NOT NULL)")
    _tamper(path, "ANALYZE")  # statistics only guide the planner
    with History.open(path) as history:
        assert len(history.runs()) == 1


def test_the_default_folder_ignores_itself_in_git(tmp_path: Path) -> None:
    path = tmp_path / ".cer" / "history.sqlite"
    History.open(path).close()
    assert (tmp_path / ".cer" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"


def test_a_chosen_history_folder_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "records" / "history.sqlite"
    History.open(path).close()
    assert not (tmp_path / "records" / ".gitignore").exists()


def test_an_existing_gitignore_in_the_folder_is_kept(tmp_path: Path) -> None:
    (tmp_path / ".cer").mkdir()
    (tmp_path / ".cer" / ".gitignore").write_text("mine\n", encoding="utf-8")
    History.open(tmp_path / ".cer" / "history.sqlite").close()
    assert (tmp_path / ".cer" / ".gitignore").read_text(encoding="utf-8") == "mine\n"


def test_each_run_keeps_the_verdict_it_stated_and_an_older_history_gains_the_table(
    tmp_path: Path,
) -> None:
    from cer.results.baseline import BaselineCheck
    from cer.results.conformance import Conformance

    path = tmp_path / "h.sqlite"
    History.open(path).close()
    with sqlite3.connect(path) as db:  # a history of version 3, before verdicts were kept
        db.execute("DROP TABLE cer_run_verdict")
        db.execute("UPDATE cer_meta SET value = '3' WHERE key = 'history_version'")
    stated = Conformance("nonconformant", BaselineCheck("known.toml"))
    with History.open(path) as history:
        history.record(make_run("r1", [("a", Status.FAIL)]))  # stated nothing
        history.record(make_run("r2", [("a", Status.FAIL)]), verdict=stated)
        newest, oldest = history.runs()
    assert newest.statement == "nonconformant: no regressions"
    assert newest.baseline == "known.toml" and newest.verdict == newest.statement
    assert oldest.statement is None and oldest.verdict == "nonconformant"
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM cer_meta WHERE key = 'history_version'")
        assert version.fetchone()[0] == str(history_module.HISTORY_VERSION)

"""Run history: every run recorded in an embedded SQLite database, and queries over it.

The database holds the three tables of the project's ``schema.sql`` (created by executing
that file, so it stays the single source of truth) plus cer's extension tables:
``cer_runs`` (suite path and content hash, implementation, notes, record order) and
``cer_case_details`` (per-case evidence: observation, expected, mismatches as JSON, and the
captured streams). A run is written in one transaction, so a process killed while
recording leaves no trace of that run; WAL mode and a busy timeout let two processes
record at once. Every failure surfaces as :class:`HistoryError`, so that callers can warn
and go on: history must never cost a run its results.

Used by ``cer run`` / ``cer history`` / ``cer diff`` and by the TUI.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cer import serialize
from cer.coverage import CoverageFigures
from cer.model import RunResult, Status, Suite, Summary
from cer.resources import ResourceMissing, schema_sql

__all__ = [
    "DEFAULT_DIR",
    "DEFAULT_NAME",
    "HISTORY_VERSION",
    "ApprovalEvent",
    "CaseChange",
    "CaseEntry",
    "FailedCases",
    "FlakyCase",
    "History",
    "HistoryError",
    "HistoryUntrusted",
    "RunDiff",
    "RunRecord",
    "default_history_path",
    "diff_statuses",
    "is_deselected",
    "suite_key",
]

DEFAULT_DIR = ".cer"
DEFAULT_NAME = "history.sqlite"
HISTORY_VERSION = 3
"""Version of cer's extension tables; a newer database is refused, never rewritten.
Version 2 added ``cer_run_conditions``, version 3 ``cer_approvals`` and
``cer_run_coverage``; an older database gets the tables it lacks on first use (the
creation script only creates what is missing)."""

APPLICATION_ID = 0x63657231
"""SQLite's ``application_id`` of a history cer made (``cer1``); 0 is accepted too, for
a database made before cer set it or not yet initialised."""

GITIGNORE_TEXT = "# Created by cer automatically.\n*\n"
"""What ``.cer/.gitignore`` holds, as ``.pytest_cache`` does: the history stays out of
``git status``."""

KEEP_RUNS = 200
"""Runs kept per suite; recording one more forgets the oldest."""

BUSY_TIMEOUT = 30.0
"""Seconds a writer waits for another writer's transaction before giving up."""

_EXTENSION_SQL = """
CREATE TABLE IF NOT EXISTS cer_meta (
    key TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS cer_runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE REFERENCES eval_runs (run_id),
    suite_path TEXT NOT NULL,
    suite_key TEXT NOT NULL,
    suite_hash TEXT NOT NULL,
    format_version TEXT NOT NULL,
    implementation TEXT NOT NULL,
    notes TEXT NOT NULL,
    recorded_at_ms INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS cer_case_details (
    run_id TEXT NOT NULL,
    case_name TEXT NOT NULL,
    position INTEGER NOT NULL,
    stdout TEXT NOT NULL,
    stderr TEXT NOT NULL,
    traceback TEXT,
    observation TEXT,
    expected TEXT,
    mismatches TEXT NOT NULL,
    PRIMARY KEY (run_id, case_name),
    FOREIGN KEY (run_id, case_name) REFERENCES eval_case_results (run_id, case_name)
);

CREATE TABLE IF NOT EXISTS cer_run_conditions (
    run_id TEXT NOT NULL PRIMARY KEY REFERENCES eval_runs (run_id),
    isolation TEXT NOT NULL,
    sandbox TEXT NOT NULL,
    network TEXT NOT NULL,
    timeout_s REAL NOT NULL,
    jobs INTEGER NOT NULL,
    category_remaps TEXT NOT NULL,
    cer_version TEXT NOT NULL,
    python_version TEXT NOT NULL
);

CREATE INDEX IF NOT EXISTS cer_runs_by_suite ON cer_runs (suite_key);

CREATE INDEX IF NOT EXISTS cer_runs_by_hash ON cer_runs (suite_hash);
CREATE INDEX IF NOT EXISTS cer_case_results_by_name ON eval_case_results (case_name);
CREATE INDEX IF NOT EXISTS cer_eval_runs_by_completion ON eval_runs (completed_at_ms);
"""

_V2_SQL = """
CREATE TABLE IF NOT EXISTS cer_approvals (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    suite_path TEXT NOT NULL,
    suite_key TEXT NOT NULL,
    case_name TEXT NOT NULL,
    constraints TEXT NOT NULL,
    approver TEXT NOT NULL,
    approved_at_ms INTEGER NOT NULL,
    text_hash TEXT NOT NULL,
    from_observation INTEGER NOT NULL CHECK (from_observation IN (0, 1)),
    observed_from TEXT
);

CREATE TABLE IF NOT EXISTS cer_run_coverage (
    run_id TEXT NOT NULL PRIMARY KEY REFERENCES eval_runs (run_id),
    constraints_total INTEGER NOT NULL,
    constraints_covered INTEGER NOT NULL,
    constraints_verified INTEGER,
    constraints_enforceable INTEGER NOT NULL,
    constraints_needs_repair INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS cer_approvals_by_suite ON cer_approvals (suite_key);
"""

_RUN_COLUMNS = """
    r.run_id, r.target_module, r.implementation_id, r.started_at_ms, r.completed_at_ms,
    c.seq, c.suite_path, c.suite_key, c.suite_hash, c.format_version, c.implementation,
    c.notes, s.cases_total, s.cases_passed, s.cases_failed, s.cases_skipped, s.cases_errored,
    v.constraints_total, v.constraints_covered, v.constraints_verified,
    v.constraints_enforceable, v.constraints_needs_repair
"""
_RUN_FROM = """
    eval_runs r
    LEFT JOIN cer_runs c ON c.run_id = r.run_id
    LEFT JOIN eval_run_summary s ON s.run_id = r.run_id
    LEFT JOIN cer_run_coverage v ON v.run_id = r.run_id
"""
_NEWEST_FIRST = "ORDER BY r.completed_at_ms DESC, COALESCE(c.seq, 0) DESC, r.run_id DESC"
_MAX_INDEX_DIGITS = 4
_MIN_PREFIX = 5


class HistoryError(Exception):
    """The history database cannot be opened, read or written; the message says why."""


class HistoryUntrusted(HistoryError):
    """The file holds something cer did not make: a trigger, a view, an altered table,
    another application's tables. A trigger could rewrite every run recorded from then
    on, so such a database is neither read nor written; the message says what was found
    and how to start afresh."""

    def __init__(self, path: Path, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = tuple(problems)
        aside = f"{path}.suspect"
        super().__init__(
            f"{path} is not a history cer made: {'; '.join(self.problems)}. cer neither "
            f"reads nor writes it; move it aside (mv {path} {aside}) to start a new "
            "history, or run with --no-history"
        )


def default_history_path(suite_path: str | Path) -> Path:
    """``.cer/history.sqlite`` in the folder of the suite."""
    return Path(suite_path).parent / DEFAULT_DIR / DEFAULT_NAME


def suite_key(suite_path: str | Path) -> str:
    """How a suite file is matched across runs: its absolute, normalised path."""
    return os.path.normcase(os.path.abspath(Path(suite_path)))


def is_deselected(status: str, reason: str | None) -> bool:
    """Whether a result only says the case was not selected (it proves nothing)."""
    return status == Status.SKIPPED.value and reason == "deselected"


@dataclass(frozen=True)
class RunRecord:
    """One recorded run as listed by ``cer history``."""

    run_id: str
    target_module: str
    implementation_id: str
    started_at_ms: int
    completed_at_ms: int
    summary: Summary
    suite_path: str = ""
    suite_hash: str = ""
    format_version: str = ""
    implementation: str = ""
    notes: tuple[str, ...] = ()
    seq: int | None = None
    """Order of recording; None for a run written by another tool (schema tables only)."""
    flaky: tuple[str, ...] = ()
    """Cases flaky under this run's implementation id and suite hash."""
    coverage: CoverageFigures | None = None
    """The run's constraint coverage figures; None when none were recorded."""

    @property
    def short_id(self) -> str:
        return self.run_id[:8]


@dataclass(frozen=True)
class ApprovalEvent:
    """A person approved a draft: it became a case of the suite.

    ``text_hash`` is the SHA-256 of the approved case's canonical text (see
    :mod:`cer.provenance`), so that a later edit of the case can be told apart.
    """

    suite_path: str
    case_name: str
    constraints: tuple[str, ...]
    approver: str
    approved_at_ms: int
    text_hash: str
    from_observation: bool
    observed_from: str | None = None


@dataclass(frozen=True)
class CaseEntry:
    """One case's result in one recorded run, for ``cer history --case``."""

    run_id: str
    started_at_ms: int
    implementation_id: str
    suite_hash: str
    status: str
    reason: str | None
    elapsed_ms: int | None
    flaky: bool


@dataclass(frozen=True)
class FlakyCase:
    """A case whose status differed between runs of one implementation id on one suite."""

    case_name: str
    implementation_id: str
    suite_hash: str
    statuses: tuple[tuple[str, int], ...]
    """Each status seen, with how many runs reported it (deselected runs not counted)."""


@dataclass(frozen=True)
class FailedCases:
    """The cases that failed or errored in one recorded run, in declared order."""

    run_id: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class CaseChange:
    """One case compared between two runs; None where the case is absent."""

    case_name: str
    before: str | None
    after: str | None
    reason: str | None = None
    """The later run's reason (the earlier one's for a removed case)."""


@dataclass(frozen=True)
class RunDiff:
    """What changed from ``before`` to ``after``."""

    before: str
    after: str
    regressions: tuple[CaseChange, ...] = ()
    """Passed before, failed or errored now."""
    fixes: tuple[CaseChange, ...] = ()
    """Failed or errored before, passed now."""
    changed: tuple[CaseChange, ...] = ()
    """Any other change of status (to or from skipped, fail to errored, ...)."""
    new: tuple[CaseChange, ...] = ()
    removed: tuple[CaseChange, ...] = ()
    unchanged: int = 0

    @property
    def is_empty(self) -> bool:
        return not (self.regressions or self.fixes or self.changed or self.new or self.removed)


_BAD = frozenset({Status.FAIL.value, Status.ERRORED.value})

StatusRow = tuple[str, str, str | None]
"""(case name, status, reason) of one result, in declared order."""


def diff_statuses(
    before: Sequence[StatusRow],
    after: Sequence[StatusRow],
    *,
    before_id: str = "",
    after_id: str = "",
) -> RunDiff:
    """Compare two runs' results; each list is (name, status, reason) in declared order."""
    old = {name: (status, reason) for name, status, reason in before}
    seen: set[str] = set()
    regressions: list[CaseChange] = []
    fixes: list[CaseChange] = []
    changed: list[CaseChange] = []
    new: list[CaseChange] = []
    unchanged = 0
    for name, status, reason in after:
        seen.add(name)
        if name not in old:
            new.append(CaseChange(name, None, status, reason))
            continue
        was = old[name][0]
        change = CaseChange(name, was, status, reason)
        if was == status:
            unchanged += 1
        elif was == Status.PASS.value and status in _BAD:
            regressions.append(change)
        elif was in _BAD and status == Status.PASS.value:
            fixes.append(change)
        else:
            changed.append(change)
    removed = [
        CaseChange(name, status, None, reason)
        for name, status, reason in before
        if name not in seen
    ]
    return RunDiff(
        before=before_id,
        after=after_id,
        regressions=tuple(regressions),
        fixes=tuple(fixes),
        changed=tuple(changed),
        new=tuple(new),
        removed=tuple(removed),
        unchanged=unchanged,
    )


def _creation_sql() -> str:
    """Every statement that creates cer's history: ``schema.sql`` and cer's own."""
    return schema_sql() + "\n" + _EXTENSION_SQL + _V2_SQL


_SQL_COMMENT = re.compile(r"--[^\n]*")
_SQL_SPACE = re.compile(r"\s+")
_SQL_TIGHT = re.compile(r" ?([(),]) ?")


def _normal_sql(sql: object) -> str | None:
    """A declaration with comments and layout removed, so that only a change of meaning
    (a column, a constraint, a clause) makes two declarations differ. A column added by
    ``ALTER TABLE ... ADD COLUMN`` reads the same as one declared last in the table."""
    if sql is None:
        return None
    text = _SQL_COMMENT.sub(" ", str(sql))
    text = _SQL_SPACE.sub(" ", text).strip()
    return _SQL_TIGHT.sub(r"\1", text)


@functools.cache
def _expected_schema() -> Mapping[str, tuple[str, str, str | None]]:
    """name → (type, table, normalised declaration) of every object cer creates, read
    from a scratch in-memory database made with the same script (computed once)."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.executescript(_creation_sql())
        rows = scratch.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
        return {
            str(name): (str(kind), str(table), _normal_sql(sql)) for kind, name, table, sql in rows
        }
    finally:
        scratch.close()


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _now_ms() -> int:
    return int(time.time() * 1000)


class History:
    """An open history database. Thread-safe; close it (or use ``with``) when done.

    Open with :meth:`open`. Every method raises :class:`HistoryError` on a database
    problem (corrupt file, unreadable, locked for longer than the busy timeout).
    """

    def __init__(
        self, path: Path, connection: sqlite3.Connection, timeout: float = BUSY_TIMEOUT
    ) -> None:
        self.path = path
        self.timeout = timeout
        self._db = connection
        self._lock = threading.RLock()

    # --- opening ----------------------------------------------------------------------

    @classmethod
    def open(
        cls, path: str | Path, *, create: bool = True, timeout: float = BUSY_TIMEOUT
    ) -> History:
        """Open (and, with ``create``, create) the history at ``path``.

        Without ``create`` a missing file is a HistoryError instead of a new database,
        so that read-only commands never leave an empty database behind.
        """
        path = Path(path)
        if not create and not path.is_file():
            raise HistoryError(f"no history at {path}")
        try:
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
                _ignore_folder(path.parent)
            connection = sqlite3.connect(
                str(path), timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open {path}: {exc}") from exc
        history = cls(path, connection, timeout)
        try:
            history._prepare()
        except HistoryError:
            connection.close()
            raise
        except ResourceMissing as exc:
            connection.close()
            raise HistoryError(str(exc)) from exc
        return history

    def _prepare(self) -> None:
        """Check the file is a history cer can use, creating its tables on first use."""
        with self._errors("open"):
            # Nothing a database file declares (a view, a trigger, an index expression)
            # may call a function with side effects on cer's behalf.
            self._db.execute("PRAGMA trusted_schema = OFF")
            self._verify_schema()
            self._db.execute("PRAGMA foreign_keys = ON")
            self._db.execute("PRAGMA synchronous = NORMAL")  # durable enough under WAL
            version = self._version()
            if version is not None and version > HISTORY_VERSION:
                raise HistoryError(
                    f"{self.path} was written by a newer cer (history version {version}); "
                    f"this one reads version {HISTORY_VERSION}"
                )
            if version == HISTORY_VERSION:
                return
            self._switch_to_wal()
            # One script, one transaction: the tables of schema.sql, cer's own, and the
            # version mark appear together or not at all.
            script = (
                "BEGIN IMMEDIATE;\n"
                + _creation_sql()
                + "\nINSERT OR REPLACE INTO cer_meta (key, value) VALUES "
                f"('history_version', '{HISTORY_VERSION}');\n"
                f"PRAGMA application_id = {APPLICATION_ID};\nCOMMIT;\n"
            )
            try:
                self._db.executescript(script)
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def _switch_to_wal(self) -> None:
        """Put the database in WAL mode. Two processes creating the same file at once
        can make SQLite answer 'locked' at once, without waiting on its busy timeout,
        so the switch is retried until the timeout has passed."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                mode = self._db.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    self._db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _verify_schema(self) -> None:
        """Refuse a database whose schema is not (a part of) the one cer creates.

        Every object in ``sqlite_master`` must be one that cer's own creation script
        makes, declared with the same statement; objects not there yet are fine (a new
        file, or one that holds only the tables of ``schema.sql``), since cer creates
        them. Anything else (a trigger, a view, an extra table or index, a table whose
        columns or constraints were changed) raises :class:`HistoryUntrusted`. Called on
        opening, inside every recording transaction and before every read, so that a
        change made while the file is open is caught before it can matter.
        """
        expected = _expected_schema()
        problems = []
        app_id = int(self._db.execute("PRAGMA application_id").fetchone()[0])
        if app_id not in (0, APPLICATION_ID):
            problems.append(f"it belongs to another application (application_id {app_id})")
        rows = self._db.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"
        ).fetchall()
        for kind, name, table, sql in rows:
            if str(name).startswith("sqlite_stat"):
                continue  # statistics ANALYZE keeps; they only guide the query planner
            found = expected.get(str(name))
            if found is None:
                where = f" on {table}" if kind in ("trigger", "index") else ""
                problems.append(f"it holds a {kind} {name!r}{where} that cer never creates")
            elif found != (kind, table, _normal_sql(sql)):
                problems.append(f"its {kind} {name!r} is not declared the way cer declares it")
        if problems:
            raise HistoryUntrusted(self.path, problems)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A read of the history, after checking its schema is still cer's own."""
        with self._errors("read"):
            self._verify_schema()
            yield

    def _version(self) -> int | None:
        row = self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'cer_meta'"
        ).fetchone()
        if row is None:
            return None
        found = self._db.execute(
            "SELECT value FROM cer_meta WHERE key = 'history_version'"
        ).fetchone()
        if found is None:
            return None
        try:
            return int(found[0])
        except ValueError:
            raise HistoryError(f"{self.path}: unreadable history version {found[0]!r}") from None

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Turn database exceptions into HistoryError naming the file and the action."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise HistoryError(f"cannot {doing} {self.path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- recording --------------------------------------------------------------------

    def record(
        self,
        run: RunResult,
        suite: Suite | None = None,
        coverage: CoverageFigures | None = None,
    ) -> None:
        """Write one run, all of it or nothing, in a single transaction.

        ``suite`` supplies each case's expect table and the content hash when the run
        lacks one; ``coverage`` the run's constraint coverage figures. Recording the
        same run id twice is a HistoryError.
        """
        expected: Mapping[str, Any] = {}
        if suite is not None:
            expected = {case.name: case.expect for case in suite.cases}
        suite_path = run.suite_path or (str(suite.path) if suite is not None else "")
        suite_hash = run.suite_hash or (suite.content_hash if suite is not None else "")
        summary = run.summary
        results = []
        details = []
        for result in run.results:
            output = result.captured_output
            results.append(
                (
                    run.run_id,
                    result.case_name,
                    result.case_class,
                    result.category,
                    result.status.value,
                    result.reason,
                    output.encode("utf-8", "surrogatepass") if output else None,
                    result.elapsed_ms,
                )
            )
            data = serialize.result_to_dict(result)
            expect = expected.get(result.case_name)
            details.append(
                (
                    run.run_id,
                    result.case_name,
                    result.position,
                    result.stdout,
                    result.stderr,
                    result.traceback,
                    None if data["observation"] is None else _json(data["observation"]),
                    None if expect is None else _json(serialize.value_to_json(dict(expect))),
                    _json(data["mismatches"]),
                )
            )
        with self._errors("record the run in"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._verify_schema()
                self._write(run, suite_path, suite_hash, summary, results, details)
                if coverage is not None:
                    self._db.execute(
                        "INSERT INTO cer_run_coverage (run_id, constraints_total,"
                        " constraints_covered, constraints_verified, constraints_enforceable,"
                        " constraints_needs_repair) VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            run.run_id,
                            coverage.total,
                            coverage.covered,
                            coverage.verified,
                            coverage.enforceable,
                            coverage.needs_repair,
                        ),
                    )
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _write(
        self,
        run: RunResult,
        suite_path: str,
        suite_hash: str,
        summary: Summary,
        results: list[tuple[Any, ...]],
        details: list[tuple[Any, ...]],
    ) -> None:
        """The statements of one run's transaction (the caller begins and commits)."""
        db = self._db
        db.execute(
            "INSERT INTO eval_runs (run_id, target_module, implementation_id, started_at_ms,"
            " completed_at_ms) VALUES (?, ?, ?, ?, ?)",
            (
                run.run_id,
                run.target_module,
                run.implementation_id,
                run.started_at_ms,
                run.completed_at_ms,
            ),
        )
        db.execute(
            "INSERT INTO cer_runs (run_id, suite_path, suite_key, suite_hash, format_version,"
            " implementation, notes, recorded_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.run_id,
                suite_path,
                suite_key(suite_path) if suite_path else "",
                suite_hash,
                run.format_version,
                run.implementation,
                _json(list(run.notes)),
                _now_ms(),
            ),
        )
        db.executemany(
            "INSERT INTO eval_case_results (run_id, case_name, case_class, category, status,"
            " reason, captured_output, elapsed_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            results,
        )
        db.executemany(
            "INSERT INTO cer_case_details (run_id, case_name, position, stdout, stderr,"
            " traceback, observation, expected, mismatches) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            details,
        )
        db.execute(
            "INSERT INTO eval_run_summary (run_id, cases_total, cases_passed, cases_failed,"
            " cases_skipped, cases_errored) VALUES (?, ?, ?, ?, ?, ?)",
            (
                run.run_id,
                summary.total,
                summary.passed,
                summary.failed,
                summary.skipped,
                summary.errored,
            ),
        )
        conditions = run.conditions
        if conditions is not None:
            db.execute(
                "INSERT INTO cer_run_conditions (run_id, isolation, sandbox, network, timeout_s,"
                " jobs, category_remaps, cer_version, python_version)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    conditions.isolation,
                    conditions.sandbox,
                    conditions.network,
                    conditions.timeout,
                    conditions.jobs,
                    _json(dict(conditions.category_remaps)),
                    conditions.cer_version,
                    conditions.python_version,
                ),
            )
        if suite_path:
            self._prune(suite_key(suite_path))

    def _prune(self, key: str) -> None:
        """Forget the runs of a suite beyond the newest :data:`KEEP_RUNS`, so that a
        watch loop saving every few seconds cannot grow the file without bound."""
        stale = [
            row[0]
            for row in self._db.execute(
                "SELECT run_id FROM cer_runs WHERE suite_key = ? ORDER BY seq DESC"
                " LIMIT -1 OFFSET ?",
                (key, KEEP_RUNS),
            )
        ]
        for table in (
            "cer_run_conditions",
            "cer_run_coverage",
            "cer_case_details",
            "eval_case_results",
            "eval_run_summary",
            "cer_runs",
            "eval_runs",
        ):
            self._db.executemany(
                f"DELETE FROM {table} WHERE run_id = ?", [(run_id,) for run_id in stale]
            )

    # --- approvals --------------------------------------------------------------------

    def record_approval(self, event: ApprovalEvent) -> None:
        """Write one approval event (in a transaction that checks the schema first)."""
        with self._errors("record the approval in"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._verify_schema()
                self._insert_approval(event)
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _insert_approval(self, event: ApprovalEvent) -> None:
        self._db.execute(
            "INSERT INTO cer_approvals (suite_path, suite_key, case_name, constraints,"
            " approver, approved_at_ms, text_hash, from_observation, observed_from)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.suite_path,
                suite_key(event.suite_path) if event.suite_path else "",
                event.case_name,
                _json(list(event.constraints)),
                event.approver,
                event.approved_at_ms,
                event.text_hash,
                int(event.from_observation),
                event.observed_from,
            ),
        )

    def approvals(
        self, *, suite_path: str | Path | None = None, limit: int | None = None
    ) -> tuple[ApprovalEvent, ...]:
        """Approval events, newest first; only those of ``suite_path`` when given."""
        sql = (
            "SELECT suite_path, case_name, constraints, approver, approved_at_ms, text_hash,"
            " from_observation, observed_from FROM cer_approvals"
        )
        params: tuple[Any, ...] = ()
        if suite_path is not None:
            sql += " WHERE suite_key = ?"
            params = (suite_key(suite_path),)
        sql += " ORDER BY approved_at_ms DESC, seq DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params = (*params, limit)
        with self._reading():
            rows = self._db.execute(sql, params).fetchall()
        events = []
        for path, case, constraints, approver, at, text_hash, observed, source in rows:
            try:
                names = tuple(str(n) for n in json.loads(constraints))
            except ValueError:
                names = ()
            events.append(
                ApprovalEvent(
                    str(path),
                    str(case),
                    names,
                    str(approver),
                    int(at),
                    str(text_hash),
                    bool(observed),
                    source,
                )
            )
        return tuple(events)

    # --- runs -------------------------------------------------------------------------

    def runs(
        self, limit: int | None = 20, *, suite_path: str | Path | None = None
    ) -> tuple[RunRecord, ...]:
        """Recorded runs, newest first; only those of ``suite_path`` when given."""
        where, params = self._suite_filter(suite_path)
        sql = f"SELECT {_RUN_COLUMNS} FROM {_RUN_FROM} {where} {_NEWEST_FIRST}"
        if limit is not None:
            sql += " LIMIT ?"
            params = (*params, limit)
        with self._reading():
            rows = self._db.execute(sql, params).fetchall()
            records = [self._record_from_row(row) for row in rows]
            groups = self._flaky_groups({(r.implementation_id, r.suite_hash) for r in records})
        return tuple(
            _with_flaky(record, groups.get((record.implementation_id, record.suite_hash), ()))
            for record in records
        )

    def run(self, ref: str, *, suite_path: str | Path | None = None) -> RunRecord:
        """The run ``ref`` names: an index (``1`` = newest, up to four digits) among the
        runs (of ``suite_path`` when given), or the first five or more characters of a run
        id. HistoryError when nothing or more than one run matches."""
        ref = ref.strip()
        if ref.isdigit() and len(ref) <= _MAX_INDEX_DIGITS:
            index = int(ref)
            if index < 1:
                raise HistoryError("run indexes start at 1 (the newest run)")
            found = self.runs(index, suite_path=suite_path)
            if len(found) < index:
                raise HistoryError(f"there is no run #{index}: {len(found)} recorded")
            return found[index - 1]
        if len(ref) < _MIN_PREFIX:
            raise HistoryError(
                f"run {ref!r}: give an index (1 = newest) or at least {_MIN_PREFIX} "
                "characters of a run id"
            )
        pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = f"SELECT {_RUN_COLUMNS} FROM {_RUN_FROM} WHERE r.run_id LIKE ? ESCAPE '\\' LIMIT 2"
        with self._reading():
            rows = self._db.execute(sql, (pattern,)).fetchall()
            if not rows:
                raise HistoryError(f"no recorded run has an id starting with {ref!r}")
            if len(rows) > 1:
                raise HistoryError(f"more than one run id starts with {ref!r}; give more of it")
            record = self._record_from_row(rows[0])
            groups = self._flaky_groups({(record.implementation_id, record.suite_hash)})
        return _with_flaky(record, groups.get((record.implementation_id, record.suite_hash), ()))

    def latest_run(self, *, suite_path: str | Path | None = None) -> RunRecord | None:
        found = self.runs(1, suite_path=suite_path)
        return found[0] if found else None

    def load_run(self, run_id: str) -> RunResult:
        """The full recorded run (results with their evidence), as a RunResult."""
        with self._reading():
            row = self._db.execute(
                f"SELECT {_RUN_COLUMNS} FROM {_RUN_FROM} WHERE r.run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise HistoryError(f"no recorded run {run_id!r}")
            record = self._record_from_row(row)
            cases = self._db.execute(
                "SELECT e.case_name, e.case_class, e.category, e.status, e.reason,"
                " e.elapsed_ms, d.position, d.stdout, d.stderr, d.traceback, d.observation,"
                " d.mismatches, e.captured_output"
                " FROM eval_case_results e LEFT JOIN cer_case_details d"
                " ON d.run_id = e.run_id AND d.case_name = e.case_name"
                " WHERE e.run_id = ? ORDER BY COALESCE(d.position, 0), e.rowid",
                (run_id,),
            ).fetchall()
            conditions = self._db.execute(
                "SELECT isolation, sandbox, network, timeout_s, jobs, category_remaps,"
                " cer_version, python_version FROM cer_run_conditions WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        results = []
        for (
            name,
            case_class,
            category,
            status,
            reason,
            elapsed,
            position,
            stdout,
            stderr,
            traceback,
            observation,
            mismatches,
            captured,
        ) in cases:
            if stdout is None and captured:  # written by another tool: keep what it has
                stdout = (
                    captured.decode("utf-8", "replace")
                    if isinstance(captured, bytes)
                    else str(captured)
                )
            results.append(
                {
                    "case_name": name,
                    "case_class": case_class,
                    "category": category,
                    "status": status,
                    "reason": reason,
                    "elapsed_ms": elapsed,
                    "position": position or 0,
                    "stdout": stdout or "",
                    "stderr": stderr or "",
                    "traceback": traceback,
                    "observation": None if observation is None else json.loads(observation),
                    "mismatches": json.loads(mismatches) if mismatches else [],
                }
            )
        document = {
            "format": serialize.FORMAT,
            "run": {
                "run_id": record.run_id,
                "target_module": record.target_module,
                "implementation_id": record.implementation_id,
                "implementation": record.implementation,
                "started_at_ms": record.started_at_ms,
                "completed_at_ms": record.completed_at_ms,
                "suite_path": record.suite_path,
                "suite_hash": record.suite_hash,
                "suite_format_version": record.format_version,
                "notes": list(record.notes),
                "conditions": None
                if conditions is None
                else dict(
                    zip(
                        (
                            "isolation",
                            "sandbox",
                            "network",
                            "timeout_s",
                            "jobs",
                            "category_remaps",
                            "cer_version",
                            "python_version",
                        ),
                        (*conditions[:5], json.loads(conditions[5]), *conditions[6:]),
                        strict=True,
                    )
                ),
            },
            "results": results,
        }
        try:
            return serialize.run_from_dict(document)
        except (KeyError, ValueError, TypeError) as exc:
            raise HistoryError(f"{self.path}: run {run_id} cannot be read back: {exc}") from exc

    def statuses(self, run_id: str) -> tuple[StatusRow, ...]:
        """(case name, status, reason) of every result of one run, in declared order."""
        with self._reading():
            rows = self._db.execute(
                "SELECT e.case_name, e.status, e.reason FROM eval_case_results e"
                " LEFT JOIN cer_case_details d"
                " ON d.run_id = e.run_id AND d.case_name = e.case_name"
                " WHERE e.run_id = ? ORDER BY COALESCE(d.position, 0), e.rowid",
                (run_id,),
            ).fetchall()
        return tuple((str(n), str(s), r) for n, s, r in rows)

    # --- questions --------------------------------------------------------------------

    def case_history(
        self, name: str, *, suite_path: str | Path | None = None, limit: int | None = 50
    ) -> tuple[CaseEntry, ...]:
        """One case's result in each recorded run that has it, newest first."""
        where, params = self._suite_filter(suite_path)
        where = f"{where} AND" if where else "WHERE"
        sql = (
            "SELECT r.run_id, r.started_at_ms, r.implementation_id, COALESCE(c.suite_hash, ''),"
            " e.status, e.reason, e.elapsed_ms"
            f" FROM {_RUN_FROM} JOIN eval_case_results e ON e.run_id = r.run_id"
            f" {where} e.case_name = ? {_NEWEST_FIRST}"
        )
        params = (*params, name)
        if limit is not None:
            sql += " LIMIT ?"
            params = (*params, limit)
        with self._reading():
            rows = self._db.execute(sql, params).fetchall()
            groups = self._flaky_groups({(row[2], row[3]) for row in rows})
        return tuple(
            CaseEntry(
                run_id=run_id,
                started_at_ms=started,
                implementation_id=impl,
                suite_hash=suite_hash,
                status=status,
                reason=reason,
                elapsed_ms=elapsed,
                flaky=name in groups.get((impl, suite_hash), ()),
            )
            for run_id, started, impl, suite_hash, status, reason, elapsed in rows
        )

    def newest_run_of(
        self, implementation: str, stem: str, *, suite_path: str | Path | None = None
    ) -> RunRecord | None:
        """The newest recorded run of one implementation (as given, ``pkg:func``, and
        its id without the hash, ``stem``), whatever its code was; None when none."""
        for record in self.runs(None, suite_path=suite_path):
            if (
                record.implementation == implementation
                and record.implementation_id.rpartition("@")[0] == stem
            ):
                return record
        return None

    def latest_failed(
        self, *, suite_path: str | Path | None = None, suite_hash: str | None = None
    ) -> FailedCases | None:
        """The failed and errored cases of the newest run of a suite (matched by path,
        by content hash, or either when both are given); None when no run matches."""
        clauses = []
        params: list[Any] = []
        if suite_path is not None:
            clauses.append("c.suite_key = ?")
            params.append(suite_key(suite_path))
        if suite_hash is not None:
            clauses.append("c.suite_hash = ?")
            params.append(suite_hash)
        where = f"WHERE {' OR '.join(clauses)}" if clauses else ""
        with self._reading():
            row = self._db.execute(
                f"SELECT r.run_id FROM {_RUN_FROM} {where} {_NEWEST_FIRST} LIMIT 1", params
            ).fetchone()
        if row is None:
            return None
        run_id = str(row[0])
        names = tuple(name for name, status, _ in self.statuses(run_id) if status in _BAD)
        return FailedCases(run_id, names)

    def diff(self, before: str, after: str) -> RunDiff:
        """Regressions, fixes, other changes, new and removed cases between two run ids."""
        return diff_statuses(
            self.statuses(before), self.statuses(after), before_id=before, after_id=after
        )

    def flaky(
        self, *, implementation_id: str | None = None, suite_hash: str | None = None
    ) -> tuple[FlakyCase, ...]:
        """Cases whose status changed between runs with the same implementation id and
        the same suite hash. Deselected results do not count: they say nothing."""
        clauses = ["NOT (e.status = 'skipped' AND COALESCE(e.reason, '') = 'deselected')"]
        params: list[Any] = []
        if implementation_id is not None:
            clauses.append("r.implementation_id = ?")
            params.append(implementation_id)
        if suite_hash is not None:
            clauses.append("c.suite_hash = ?")
            params.append(suite_hash)
        sql = (
            "SELECT r.implementation_id, c.suite_hash, e.case_name, e.status, COUNT(*)"
            " FROM eval_case_results e JOIN eval_runs r ON r.run_id = e.run_id"
            " JOIN cer_runs c ON c.run_id = e.run_id"
            f" WHERE {' AND '.join(clauses)}"
            " GROUP BY r.implementation_id, c.suite_hash, e.case_name, e.status"
            " ORDER BY r.implementation_id, c.suite_hash, e.case_name, e.status"
        )
        with self._reading():
            rows = self._db.execute(sql, params).fetchall()
        grouped: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
        for impl, hash_, name, status, count in rows:
            grouped.setdefault((impl, hash_, name), []).append((status, int(count)))
        return tuple(
            FlakyCase(name, impl, hash_, tuple(statuses))
            for (impl, hash_, name), statuses in grouped.items()
            if len(statuses) > 1
        )

    def flaky_names(self, implementation_id: str, suite_hash: str) -> frozenset[str]:
        """Names of the cases flaky under one implementation id and suite hash."""
        found = self.flaky(implementation_id=implementation_id, suite_hash=suite_hash)
        return frozenset(case.case_name for case in found)

    # --- helpers ----------------------------------------------------------------------

    def _flaky_groups(
        self, keys: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[str, ...]]:
        groups: dict[tuple[str, str], tuple[str, ...]] = {}
        for impl, suite_hash in keys:
            if not suite_hash:
                continue
            found = self.flaky(implementation_id=impl, suite_hash=suite_hash)
            groups[(impl, suite_hash)] = tuple(case.case_name for case in found)
        return groups

    @staticmethod
    def _suite_filter(suite_path: str | Path | None) -> tuple[str, tuple[Any, ...]]:
        if suite_path is None:
            return "", ()
        return "WHERE c.suite_key = ?", (suite_key(suite_path),)

    def _record_from_row(self, row: Sequence[Any]) -> RunRecord:
        (
            run_id,
            target,
            impl_id,
            started,
            completed,
            seq,
            suite_path,
            _key,
            suite_hash,
            format_version,
            implementation,
            notes,
            total,
            passed,
            failed,
            skipped,
            errored,
            c_total,
            c_covered,
            c_verified,
            c_enforceable,
            c_repair,
        ) = row
        figures = None
        if c_total is not None:
            figures = CoverageFigures(c_total, c_covered, c_verified, c_enforceable, c_repair)
        if total is None:
            summary = self._summary_from_cases(run_id)
        else:
            summary = Summary(total, passed, failed, skipped, errored)
        try:
            note_list = tuple(str(n) for n in json.loads(notes)) if notes else ()
        except ValueError:
            note_list = ()
        return RunRecord(
            run_id=str(run_id),
            target_module=str(target),
            implementation_id=str(impl_id),
            started_at_ms=int(started),
            completed_at_ms=int(completed),
            summary=summary,
            suite_path=suite_path or "",
            suite_hash=suite_hash or "",
            format_version=format_version or "",
            implementation=implementation or "",
            notes=note_list,
            seq=seq,
            coverage=figures,
        )

    def _summary_from_cases(self, run_id: str) -> Summary:
        counts = dict(
            self._db.execute(
                "SELECT status, COUNT(*) FROM eval_case_results WHERE run_id = ? GROUP BY status",
                (run_id,),
            ).fetchall()
        )
        passed, failed = counts.get("pass", 0), counts.get("fail", 0)
        skipped, errored = counts.get("skipped", 0), counts.get("errored", 0)
        return Summary(passed + failed + skipped + errored, passed, failed, skipped, errored)


def _with_flaky(record: RunRecord, names: tuple[str, ...]) -> RunRecord:
    return replace(record, flaky=names) if names else record


def _ignore_folder(folder: Path) -> None:
    """Write ``.gitignore`` (ignoring everything) into a ``.cer`` folder that has none.

    Only a folder named ``.cer`` gets one: a ``--history`` path elsewhere is the user's
    folder, whose files may well belong in version control. Best effort: a folder that
    cannot be written still gets its history error from opening the database itself.
    """
    if folder.name != DEFAULT_DIR:
        return
    marker = folder / ".gitignore"
    try:
        if not marker.exists():
            marker.write_text(GITIGNORE_TEXT, encoding="utf-8")
    except OSError:
        pass

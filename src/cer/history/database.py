"""Run history: every run recorded in an embedded SQLite database, and questions asked
of it.

The database holds the three tables of the project's ``schema.sql`` (created by executing
that file, so it stays the single source of truth) plus cer's extension tables:
``cer_runs`` (suite path and content hash, implementation, notes, record order) and
``cer_case_details`` (per-case evidence: observation, expected, mismatches as JSON, and the
captured streams). A run is written in one transaction, so a process killed while
recording leaves no trace of that run; WAL mode and a busy timeout let two processes
record at once. Every failure surfaces as :class:`HistoryError`, so that callers can warn
and go on: history must never cost a run its results.

:class:`History` is the open database: it records into it and answers the questions
asked of it (``cer history``, ``cer diff``, flaky cases, "failed last time",
approvals, the TUI's history pane), all through one guarded connection
(:class:`~cer.history.access.Access`). Used by ``cer run`` / ``cer history`` /
``cer diff`` and by the TUI.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cer.constraints import CoverageFigures
from cer.engine.options import STOPPED
from cer.history.access import Access
from cer.history.budget import DEFAULT_HISTORY_MAX_MB, MAX_AGE_DAYS, stored_cases
from cer.history.gaps import clear_gap, mark_gap, ran_whole_suite
from cer.history.records import (
    BAD_STATUSES,
    NOT_SELECTED,
    ApprovalEvent,
    CaseEntry,
    FailedCases,
    FlakyCase,
    HistoryError,
    RunDiff,
    RunRecord,
    StatusRow,
    diff_statuses,
    suite_key,
)
from cer.history.schema import (
    APPLICATION_ID,
    creation_sql,
)
from cer.model import Case, RunResult, Suite, Summary, fail_class_of
from cer.resources import ResourceMissing
from cer.results import serialize

if TYPE_CHECKING:
    from cer.results.conformance import Conformance

__all__ = [
    "DEFAULT_DIR",
    "DEFAULT_NAME",
    "HISTORY_VERSION",
    "History",
    "default_history_path",
]

DEFAULT_DIR = ".cer"
DEFAULT_NAME = "history.sqlite"
HISTORY_VERSION = 5
"""Version of cer's extension tables; a newer database is refused, never rewritten.
Version 2 added ``cer_run_conditions``, version 3 ``cer_approvals`` and
``cer_run_coverage``, version 4 ``cer_run_verdict``, version 5 ``cer_case_fail_classes``
and ``cer_run_conditions_full``; an older database gets the tables
it lacks on first use (the creation script only creates what is missing)."""


GITIGNORE_TEXT = "# Created by cer automatically.\n*\n"
"""What ``.cer/.gitignore`` holds, as ``.pytest_cache`` does: the history stays out of
``git status``."""

KEEP_RUNS = 200
"""Runs kept per suite; recording one more forgets the oldest."""

BUSY_TIMEOUT = 30.0
"""Seconds a writer waits for another writer's transaction before giving up."""


def default_history_path(suite_path: str | Path) -> Path:
    """``.cer/history.sqlite`` in the folder of the suite."""
    return Path(suite_path).parent / DEFAULT_DIR / DEFAULT_NAME


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
        self,
        path: Path,
        connection: sqlite3.Connection,
        timeout: float = BUSY_TIMEOUT,
        max_bytes: int = DEFAULT_HISTORY_MAX_MB * 1024 * 1024,
    ) -> None:
        self.path = path
        self.timeout = timeout
        self.max_bytes = max_bytes
        """The size the runs may take (``[tool.cer] history_max_mb``): recording a run
        forgets the oldest runs until they fit."""
        self._access = Access(path, connection)
        self._db = connection
        self._lock = self._access.lock
        self._warming: threading.Thread | None = None

    # --- opening ----------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: bool = True,
        timeout: float = BUSY_TIMEOUT,
        max_bytes: int | None = None,
    ) -> History:
        """Open (and, with ``create``, create) the history at ``path``; ``max_bytes``
        bounds the size of its runs (default :data:`DEFAULT_HISTORY_MAX_MB` MiB).

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
        if max_bytes is not None:
            history.max_bytes = max_bytes
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
        with self._access.errors("open"):
            # Nothing a database file declares (a view, a trigger, an index expression)
            # may call a function with side effects on cer's behalf.
            self._db.execute("PRAGMA trusted_schema = OFF")
            self._access.verify_schema()
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
                + creation_sql()
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

    def close(self) -> None:
        self._warmed()
        with self._lock:
            self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- recording --------------------------------------------------------------------

    def warm_up(self) -> None:
        """Start, in a background thread, the disk work the next :meth:`record` would
        begin with, so that it overlaps whatever the caller does meanwhile (``cer run``:
        the run itself).

        SQLite removes its write-ahead log when the last connection closes, so the first
        write of every process creates it again, and creating it costs two flushes to
        disk (the log's header and its folder). The warm-up is a transaction of its own
        that writes the database's ``user_version`` back unchanged, after checking the
        schema as a recording does: nothing in the file changes meaning. It does not
        wait for another process's write to end, and whatever goes wrong in it is left
        for :meth:`record` to meet and report. :meth:`record` and :meth:`close` wait
        for it.
        """
        with self._lock:
            if self._warming is None:
                self._warming = threading.Thread(
                    target=self._warm, name="cer-history-warm-up", daemon=True
                )
                self._warming.start()

    def _warm(self) -> None:
        with contextlib.suppress(Exception), self._access.errors("prepare"):
            # Only ever a head start: while another process writes, it gives up at once
            # rather than wait out the busy timeout (which an interrupted run would
            # then wait for too, in close).
            self._db.execute("PRAGMA busy_timeout = 0")
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._access.verify_schema()
                    version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
                    self._db.execute(f"PRAGMA user_version = {version}")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {round(self.timeout * 1000)}")

    def _warmed(self) -> None:
        """Wait for a warm-up still running (see :meth:`warm_up`)."""
        warming = self._warming
        if warming is not None:
            warming.join()

    def record(
        self,
        run: RunResult,
        suite: Suite | None = None,
        coverage: CoverageFigures | None = None,
        verdict: Conformance | None = None,
    ) -> None:
        """Write one run, all of it or nothing, in a single transaction.

        ``suite`` supplies each case's expect table and the content hash when the run
        lacks one; ``coverage`` the run's constraint coverage figures; ``verdict`` the
        sentence its reports stated (with the baseline's counts), which ``cer history``
        shows as it was. Recording the same run id twice is a HistoryError.

        A run that cannot be recorded leaves a mark beside the database
        (:mod:`cer.history.gaps`), so that ``--failed`` does not trust the older run
        it would otherwise read; recording a run of the whole suite removes it.
        """
        suite_path = run.suite_path or (str(suite.path) if suite is not None else "")
        try:
            self._record(run, suite, coverage, suite_path, verdict)
        except HistoryError:
            if suite_path:
                mark_gap(self.path, suite_path)
            raise
        if suite_path and ran_whole_suite(run):
            clear_gap(self.path, suite_path)

    def _record(
        self,
        run: RunResult,
        suite: Suite | None,
        coverage: CoverageFigures | None,
        suite_path: str,
        verdict: Conformance | None = None,
    ) -> None:
        """The body of :meth:`record`."""
        # The cases, not their expect tables: a loaded suite decodes a table on every
        # read, and decoding all of them at once would hold them all in memory.
        cases: Mapping[str, Case] = {}
        if suite is not None:
            cases = {case.name: case for case in suite.cases}
        suite_hash = run.suite_hash or (suite.content_hash if suite is not None else "")
        summary = run.summary
        results = []
        details = []
        for result, stored in zip(run.results, stored_cases(run.results, cases), strict=True):
            output = stored.captured_output
            results.append(
                (
                    run.run_id,
                    result.case_name,
                    result.case_class,
                    result.category,
                    result.status.value,
                    stored.reason,
                    output.encode("utf-8", "surrogatepass") if output else None,
                    result.elapsed_ms,
                )
            )
            details.append(
                (
                    run.run_id,
                    result.case_name,
                    result.position,
                    stored.stdout,
                    stored.stderr,
                    stored.traceback,
                    stored.observation,
                    stored.expected,
                    stored.mismatches,
                )
            )
        self._warmed()
        with self._access.errors("record the run in"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._access.verify_schema()
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
                if verdict is not None:
                    check = verdict.baseline
                    self._db.execute(
                        "INSERT INTO cer_run_verdict (run_id, statement, baseline,"
                        " known_failures, regressions, stale) VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            run.run_id,
                            verdict.statement,
                            None if check is None else check.path,
                            None if check is None else len(check.known),
                            None if check is None else len(check.regressions),
                            None if check is None else len(check.stale),
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
        db.executemany(
            "INSERT INTO cer_case_fail_classes (run_id, case_name, fail_class) VALUES (?, ?, ?)",
            [
                (run.run_id, result.case_name, result.fail_class)
                for result in run.results
                if result.fail_class is not None
            ],
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
            db.execute(
                "INSERT INTO cer_run_conditions_full (run_id, conditions) VALUES (?, ?)",
                (run.run_id, _json(conditions.to_dict())),
            )
        if suite_path:
            self._prune(suite_key(suite_path))
        self._prune_by_age()
        self._prune_by_size(run.run_id)

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
        self._forget(stale)

    def _prune_by_age(self) -> None:
        """Forget the runs recorded more than :data:`MAX_AGE_DAYS` ago, but the newest of
        each suite (what ``--failed`` and ``cer diff`` start from)."""
        cutoff = _now_ms() - MAX_AGE_DAYS * 86_400_000
        stale = [
            row[0]
            for row in self._db.execute(
                "SELECT c.run_id FROM cer_runs c WHERE c.recorded_at_ms < ?"
                " AND c.seq < (SELECT MAX(n.seq) FROM cer_runs n"
                " WHERE n.suite_key = c.suite_key)",
                (cutoff,),
            )
        ]
        self._forget(stale)

    def used_bytes(self) -> int:
        """The bytes the database's pages in use take (its free pages not counted)."""
        with self._access.errors("measure"):
            return self._used_bytes()

    def _used_bytes(self) -> int:
        db = self._db
        pages = int(db.execute("PRAGMA page_count").fetchone()[0])
        free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
        return (pages - free) * size

    def _prune_by_size(self, keep: str) -> None:
        """Forget the oldest runs, of any suite, until the database's pages in use fit
        in :attr:`max_bytes`; the run ``keep`` (the one just recorded) stays."""
        while self._used_bytes() > self.max_bytes:
            oldest = [
                row[0]
                for row in self._db.execute(
                    "SELECT run_id FROM cer_runs WHERE run_id != ? ORDER BY seq LIMIT 8",
                    (keep,),
                )
            ]
            if not oldest:
                return
            self._forget(oldest)

    def _forget(self, stale: list[str]) -> None:
        """Delete every row of the runs ``stale``."""
        if not stale:
            return
        for table in (
            "cer_case_fail_classes",
            "cer_run_conditions_full",
            "cer_run_verdict",
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
        with self._access.errors("record the approval in"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._access.verify_schema()
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

    # --- questions -------------------------------------------------------------------

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
        with self._access.reading():
            rows = self._access.db.execute(sql, params).fetchall()
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

    def runs(
        self, limit: int | None = 20, *, suite_path: str | Path | None = None
    ) -> tuple[RunRecord, ...]:
        """Recorded runs, newest first; only those of ``suite_path`` when given."""
        where, params = self._suite_filter(suite_path)
        sql = f"SELECT {_RUN_COLUMNS} FROM {_RUN_FROM} {where} {_NEWEST_FIRST}"
        if limit is not None:
            sql += " LIMIT ?"
            params = (*params, limit)
        with self._access.reading():
            rows = self._access.db.execute(sql, params).fetchall()
            records = [self._record_from_row(row) for row in rows]
            groups = self._flaky_groups({(r.implementation_id, r.suite_hash) for r in records})
            partial = self._partial_runs([r.run_id for r in records])
        return tuple(
            replace(
                _with_flaky(record, groups.get((record.implementation_id, record.suite_hash), ())),
                partial=record.run_id in partial,
            )
            for record in records
        )

    def _partial_runs(self, run_ids: list[str]) -> frozenset[str]:
        """Which of ``run_ids`` left a case out for not selecting it (``s``, ``n``,
        ``--case``, a shard) or for stopping before it (``-x``, ``--max-fail``): runs of
        part of the suite."""
        found: set[str] = set()
        for start in range(0, len(run_ids), 500):
            chunk = run_ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = self._access.db.execute(
                f"SELECT DISTINCT e.run_id FROM eval_case_results e WHERE {_LEFT_OUT}"
                f" AND e.run_id IN ({marks})",
                (*_LEFT_OUT_PARAMS, *chunk),
            ).fetchall()
            found.update(row[0] for row in rows)
        return frozenset(found)

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
        with self._access.reading():
            rows = self._access.db.execute(sql, (pattern,)).fetchall()
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
        with self._access.reading():
            row = self._access.db.execute(
                f"SELECT {_RUN_COLUMNS} FROM {_RUN_FROM} WHERE r.run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise HistoryError(f"no recorded run {run_id!r}")
            record = self._record_from_row(row)
            cases = self._access.db.execute(
                "SELECT e.case_name, e.case_class, e.category, e.status, e.reason,"
                " e.elapsed_ms, d.position, d.stdout, d.stderr, d.traceback, d.observation,"
                " d.mismatches, e.captured_output, f.fail_class"
                " FROM eval_case_results e LEFT JOIN cer_case_details d"
                " ON d.run_id = e.run_id AND d.case_name = e.case_name"
                " LEFT JOIN cer_case_fail_classes f"
                " ON f.run_id = e.run_id AND f.case_name = e.case_name"
                " WHERE e.run_id = ? ORDER BY COALESCE(d.position, 0), e.rowid",
                (run_id,),
            ).fetchall()
            conditions = self._access.db.execute(
                "SELECT isolation, sandbox, network, timeout_s, jobs, category_remaps,"
                " cer_version, python_version FROM cer_run_conditions WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            every_condition = self._access.db.execute(
                "SELECT conditions FROM cer_run_conditions_full WHERE run_id = ?", (run_id,)
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
            fail_class,
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
                    "fail_class": fail_class,
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
                "conditions": self._every_condition(run_id, every_condition[0])
                if every_condition is not None
                else None
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
            raise HistoryError(
                f"{self._access.path}: run {run_id} cannot be read back: {exc}"
            ) from exc

    def _every_condition(self, run_id: str, text: object) -> Any:
        """The conditions a run recorded as JSON (``cer_run_conditions_full``)."""
        try:
            return json.loads(str(text))
        except ValueError as exc:
            raise HistoryError(
                f"{self._access.path}: run {run_id} cannot be read back: its conditions: {exc}"
            ) from exc

    def statuses(self, run_id: str) -> tuple[StatusRow, ...]:
        """(case name, status, reason) of every result of one run, in declared order."""
        with self._access.reading():
            rows = self._access.db.execute(
                "SELECT e.case_name, e.status, e.reason FROM eval_case_results e"
                " LEFT JOIN cer_case_details d"
                " ON d.run_id = e.run_id AND d.case_name = e.case_name"
                " WHERE e.run_id = ? ORDER BY COALESCE(d.position, 0), e.rowid",
                (run_id,),
            ).fetchall()
        return tuple((str(n), str(s), r) for n, s, r in rows)

    def fail_classes(self, run_id: str) -> dict[str, str]:
        """Case name → fail class of every failed or errored result of one run that
        carries one (none for a run recorded before classes were)."""
        with self._access.reading():
            rows = self._access.db.execute(
                "SELECT case_name, fail_class FROM cer_case_fail_classes WHERE run_id = ?",
                (run_id,),
            ).fetchall()
        # Only the words cer writes: the file is data, whatever else it may hold.
        return {str(name): known for name, found in rows if (known := fail_class_of(found))}

    def case_history(
        self, name: str, *, suite_path: str | Path | None = None, limit: int | None = 50
    ) -> tuple[CaseEntry, ...]:
        """One case's result in each recorded run that has it, newest first."""
        where, params = self._suite_filter(suite_path)
        where = f"{where} AND" if where else "WHERE"
        sql = (
            "SELECT r.run_id, r.started_at_ms, r.implementation_id, COALESCE(c.suite_hash, ''),"
            " e.status, e.reason, e.elapsed_ms, f.fail_class"
            f" FROM {_RUN_FROM} JOIN eval_case_results e ON e.run_id = r.run_id"
            " LEFT JOIN cer_case_fail_classes f"
            " ON f.run_id = e.run_id AND f.case_name = e.case_name"
            f" {where} e.case_name = ? {_NEWEST_FIRST}"
        )
        params = (*params, name)
        if limit is not None:
            sql += " LIMIT ?"
            params = (*params, limit)
        with self._access.reading():
            rows = self._access.db.execute(sql, params).fetchall()
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
                fail_class=fail_class_of(fail_class),
            )
            for run_id, started, impl, suite_hash, status, reason, elapsed, fail_class in rows
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
        with self._access.reading():
            row = self._access.db.execute(
                f"SELECT r.run_id FROM {_RUN_FROM} {where} {_NEWEST_FIRST} LIMIT 1", params
            ).fetchone()
        if row is None:
            return None
        run_id = str(row[0])
        names = tuple(name for name, status, _ in self.statuses(run_id) if status in BAD_STATUSES)
        return FailedCases(run_id, names)

    def diff(self, before: str, after: str) -> RunDiff:
        """Regressions, fixes, other changes, new and removed cases between two run ids."""
        return diff_statuses(
            self.statuses(before),
            self.statuses(after),
            before_id=before,
            after_id=after,
            classes=(self.fail_classes(before), self.fail_classes(after)),
        )

    def flaky(
        self, *, implementation_id: str | None = None, suite_hash: str | None = None
    ) -> tuple[FlakyCase, ...]:
        """Cases whose status changed between runs with the same implementation id and
        the same suite hash. A case that was not run for not being selected (deselected,
        or in another shard), or not reached because the run stopped (``-x``,
        ``--max-fail``), does not count: it says nothing about the code."""
        clauses = [f"NOT {_LEFT_OUT}"]
        params: list[Any] = list(_LEFT_OUT_PARAMS)
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
        with self._access.reading():
            rows = self._access.db.execute(sql, params).fetchall()
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
            statement,
            baseline,
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
            statement=None if statement is None else str(statement),
            baseline=None if baseline is None else str(baseline),
        )

    def _summary_from_cases(self, run_id: str) -> Summary:
        counts = dict(
            self._access.db.execute(
                "SELECT status, COUNT(*) FROM eval_case_results WHERE run_id = ? GROUP BY status",
                (run_id,),
            ).fetchall()
        )
        passed, failed = counts.get("pass", 0), counts.get("fail", 0)
        skipped, errored = counts.get("skipped", 0), counts.get("errored", 0)
        return Summary(passed + failed + skipped + errored, passed, failed, skipped, errored)


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


_RUN_COLUMNS = """
    r.run_id, r.target_module, r.implementation_id, r.started_at_ms, r.completed_at_ms,
    c.seq, c.suite_path, c.suite_key, c.suite_hash, c.format_version, c.implementation,
    c.notes, s.cases_total, s.cases_passed, s.cases_failed, s.cases_skipped, s.cases_errored,
    v.constraints_total, v.constraints_covered, v.constraints_verified,
    v.constraints_enforceable, v.constraints_needs_repair, d.statement, d.baseline
"""


_RUN_FROM = """
    eval_runs r
    LEFT JOIN cer_runs c ON c.run_id = r.run_id
    LEFT JOIN eval_run_summary s ON s.run_id = r.run_id
    LEFT JOIN cer_run_coverage v ON v.run_id = r.run_id
    LEFT JOIN cer_run_verdict d ON d.run_id = r.run_id
"""


_LEFT_OUT = (
    "(e.status = 'skipped' AND (COALESCE(e.reason, '') IN (?, ?)"
    " OR substr(COALESCE(e.reason, ''), 1, ?) = ?))"
)
"""A result ``e`` of a case the run left out, not selected (deselected, another
shard) or not reached (the run stopped): the SQL twin of
:func:`cer.history.gaps.ran_whole_suite`; its parameters are :data:`_LEFT_OUT_PARAMS`."""
_LEFT_OUT_PARAMS = (*NOT_SELECTED, len(STOPPED), STOPPED)
_NEWEST_FIRST = "ORDER BY r.completed_at_ms DESC, COALESCE(c.seq, 0) DESC, r.run_id DESC"


_MAX_INDEX_DIGITS = 4


_MIN_PREFIX = 5


def _with_flaky(record: RunRecord, names: tuple[str, ...]) -> RunRecord:
    return replace(record, flaky=names) if names else record

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

:class:`History` is the open database and records into it; the questions are
:class:`~cer.history.queries.HistoryQueries`, a collaborator reading through the same
connection (:class:`~cer.history.access.Access`), which :class:`History` asks for its
callers. Used by ``cer run`` / ``cer history`` / ``cer diff`` and by the TUI.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cer.coverage import CoverageFigures
from cer.history.access import Access
from cer.history.budget import DEFAULT_HISTORY_MAX_MB, MAX_AGE_DAYS, stored_cases
from cer.history.gaps import clear_gap, mark_gap, ran_whole_suite
from cer.history.queries import HistoryQueries
from cer.history.records import (
    ApprovalEvent,
    CaseEntry,
    FailedCases,
    FlakyCase,
    HistoryError,
    RunDiff,
    RunRecord,
    StatusRow,
    suite_key,
)
from cer.history.schema import (
    APPLICATION_ID,
    creation_sql,
)
from cer.model import Case, RunResult, Suite, Summary
from cer.resources import ResourceMissing

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
HISTORY_VERSION = 4
"""Version of cer's extension tables; a newer database is refused, never rewritten.
Version 2 added ``cer_run_conditions``, version 3 ``cer_approvals`` and
``cer_run_coverage``, version 4 ``cer_run_verdict``; an older database gets the tables
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
        self.queries = HistoryQueries(self._access)
        """What is asked of the history; its methods are also this class's own."""

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

    # --- questions (asked of the queries) ----------------------------------------------

    def approvals(
        self, *, suite_path: str | Path | None = None, limit: int | None = None
    ) -> tuple[ApprovalEvent, ...]:
        """The question :meth:`HistoryQueries.approvals` answers."""
        return self.queries.approvals(suite_path=suite_path, limit=limit)

    def runs(
        self, limit: int | None = 20, *, suite_path: str | Path | None = None
    ) -> tuple[RunRecord, ...]:
        """The question :meth:`HistoryQueries.runs` answers."""
        return self.queries.runs(limit, suite_path=suite_path)

    def run(self, ref: str, *, suite_path: str | Path | None = None) -> RunRecord:
        """The question :meth:`HistoryQueries.run` answers."""
        return self.queries.run(ref, suite_path=suite_path)

    def latest_run(self, *, suite_path: str | Path | None = None) -> RunRecord | None:
        """The question :meth:`HistoryQueries.latest_run` answers."""
        return self.queries.latest_run(suite_path=suite_path)

    def load_run(self, run_id: str) -> RunResult:
        """The question :meth:`HistoryQueries.load_run` answers."""
        return self.queries.load_run(run_id)

    def statuses(self, run_id: str) -> tuple[StatusRow, ...]:
        """The question :meth:`HistoryQueries.statuses` answers."""
        return self.queries.statuses(run_id)

    def case_history(
        self, name: str, *, suite_path: str | Path | None = None, limit: int | None = 50
    ) -> tuple[CaseEntry, ...]:
        """The question :meth:`HistoryQueries.case_history` answers."""
        return self.queries.case_history(name, suite_path=suite_path, limit=limit)

    def newest_run_of(
        self, implementation: str, stem: str, *, suite_path: str | Path | None = None
    ) -> RunRecord | None:
        """The question :meth:`HistoryQueries.newest_run_of` answers."""
        return self.queries.newest_run_of(implementation, stem, suite_path=suite_path)

    def latest_failed(
        self, *, suite_path: str | Path | None = None, suite_hash: str | None = None
    ) -> FailedCases | None:
        """The question :meth:`HistoryQueries.latest_failed` answers."""
        return self.queries.latest_failed(suite_path=suite_path, suite_hash=suite_hash)

    def diff(self, before: str, after: str) -> RunDiff:
        """The question :meth:`HistoryQueries.diff` answers."""
        return self.queries.diff(before, after)

    def flaky(
        self, *, implementation_id: str | None = None, suite_hash: str | None = None
    ) -> tuple[FlakyCase, ...]:
        """The question :meth:`HistoryQueries.flaky` answers."""
        return self.queries.flaky(implementation_id=implementation_id, suite_hash=suite_hash)

    def flaky_names(self, implementation_id: str, suite_hash: str) -> frozenset[str]:
        """The question :meth:`HistoryQueries.flaky_names` answers."""
        return self.queries.flaky_names(implementation_id, suite_hash)


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

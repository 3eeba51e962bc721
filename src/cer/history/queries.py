"""Reading the history back: the queries behind ``cer history``, ``cer diff``, flaky
cases, "failed last time", approvals and the TUI's history pane.
:class:`cer.history.database.History` is the open database and records into it; this
is the collaborator it asks its questions of, reading through the same connection."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cer.coverage import CoverageFigures
from cer.engine.options import OTHER_SHARD
from cer.history.access import Access
from cer.history.records import (
    BAD_STATUSES,
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
from cer.model import RunResult, Summary
from cer.results import serialize

NOT_SELECTED = ("deselected", OTHER_SHARD)
"""The reasons of a skipped case that was only not selected for a run: they prove
nothing about it."""


class HistoryQueries:
    """The questions asked of an open history (see :class:`cer.history.database.History`,
    which asks them for its callers), through the connection it shares with the
    recording."""

    def __init__(self, access: Access) -> None:
        self._access = access

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
        ``--case``, a shard): runs of part of the suite."""
        found: set[str] = set()
        for start in range(0, len(run_ids), 500):
            chunk = run_ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            rows = self._access.db.execute(
                "SELECT DISTINCT run_id FROM eval_case_results WHERE status = 'skipped'"
                f" AND COALESCE(reason, '') IN (?, ?) AND run_id IN ({marks})",
                (*NOT_SELECTED, *chunk),
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
                " d.mismatches, e.captured_output"
                " FROM eval_case_results e LEFT JOIN cer_case_details d"
                " ON d.run_id = e.run_id AND d.case_name = e.case_name"
                " WHERE e.run_id = ? ORDER BY COALESCE(d.position, 0), e.rowid",
                (run_id,),
            ).fetchall()
            conditions = self._access.db.execute(
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
            raise HistoryError(
                f"{self._access.path}: run {run_id} cannot be read back: {exc}"
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
            self.statuses(before), self.statuses(after), before_id=before, after_id=after
        )

    def flaky(
        self, *, implementation_id: str | None = None, suite_hash: str | None = None
    ) -> tuple[FlakyCase, ...]:
        """Cases whose status changed between runs with the same implementation id and
        the same suite hash. A case that was not run for not being selected (deselected,
        or in another shard) does not count: it says nothing."""
        clauses = ["NOT (e.status = 'skipped' AND COALESCE(e.reason, '') IN (?, ?))"]
        params: list[Any] = list(NOT_SELECTED)
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


_NEWEST_FIRST = "ORDER BY r.completed_at_ms DESC, COALESCE(c.seq, 0) DESC, r.run_id DESC"


_MAX_INDEX_DIGITS = 4


_MIN_PREFIX = 5


def _with_flaky(record: RunRecord, names: tuple[str, ...]) -> RunRecord:
    return replace(record, flaky=names) if names else record

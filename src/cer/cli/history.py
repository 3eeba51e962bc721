"""``cer history`` and ``cer diff``: reading the recorded runs back, as text, JSON
or an HTML page."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cer.cli.exits import ExitCode, print_error, print_warning
from cer.config import (
    UsageError,
    find_project_config,
    history_max_bytes,
    resolve_suite,
)
from cer.constraints import (
    CoverageFigures,
)
from cer.history.database import KEEP_RUNS, History, default_history_path
from cer.history.records import HistoryError, RunDiff, RunRecord
from cer.reports import (
    iso_time,
    write_report,
)
from cer.reports import text as text_report
from cer.results.conformance import word_of
from cer.text.safetext import for_json


def _history_location(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The database ``cer history``/``cer diff`` read, and the suite whose runs count."""
    if args.history is not None:
        suite: Path | None = args.suite
        if suite is None:
            suite = find_project_config().path_value("suite")
        return args.history, suite
    try:
        suite = resolve_suite(args.suite, find_project_config())
    except UsageError:
        raise UsageError(
            "no suite given: pass --suite PATH or --history PATH, set suite in [tool.cer] "
            "of pyproject.toml, or run where ./evals.toml is"
        ) from None
    return default_history_path(suite), suite


def _open_for_reading(args: argparse.Namespace) -> tuple[History, Path | None]:
    path, suite = _history_location(args)
    return History.open(path, create=False), suite


def _record_json(record: RunRecord) -> dict[str, Any]:
    s = record.summary
    return {
        "run_id": record.run_id,
        "started_at": iso_time(record.started_at_ms),
        "completed_at": iso_time(record.completed_at_ms),
        "target_module": record.target_module,
        "implementation": record.implementation,
        "implementation_id": record.implementation_id,
        "suite_path": record.suite_path,
        "suite_hash": record.suite_hash,
        "summary": {
            "cases_total": s.total,
            "cases_passed": s.passed,
            "cases_failed": s.failed,
            "cases_skipped": s.skipped,
            "cases_errored": s.errored,
            "verdict": word_of(record.statement, s.verdict),
        },
        "conformance": record.statement,
        "partial": record.partial,
        "baseline": record.baseline,
        "flaky": list(record.flaky),
        "coverage": None if record.coverage is None else _figures_json(record.coverage),
    }


def _figures_json(figures: CoverageFigures) -> dict[str, Any]:
    return {
        "constraints_total": figures.total,
        "constraints_covered": figures.covered,
        "constraints_verified": figures.verified,
        "constraints_enforceable": figures.enforceable,
        "constraints_needs_repair": figures.needs_repair,
    }


def _size(history: History) -> dict[str, int]:
    """How large the history is: its files on disk (with SQLite's journal), the pages
    its runs use, and the limit recording keeps them to (``history_max_mb``)."""
    on_disk = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            on_disk += Path(f"{history.path}{suffix}").stat().st_size
    try:
        limit = history_max_bytes(find_project_config())
    except UsageError:
        limit = history.max_bytes
    return {"bytes_on_disk": on_disk, "bytes_used": history.used_bytes(), "max_bytes": limit}


def _mib(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MiB"


def _size_line(size: dict[str, int]) -> str:
    return (
        f"history size: {_mib(size['bytes_on_disk'])} on disk, {_mib(size['bytes_used'])} "
        f"in use (limit {_mib(size['max_bytes'])}, history_max_mb in [tool.cer])\n"
    )


HISTORY_LIMIT = 20
"""Runs ``cer history`` lists without ``-n``."""


def _history_html(args: argparse.Namespace) -> ExitCode:
    """``cer history --html PATH``: the newest recorded run of the suite as a page."""
    from cer.reports import html
    from cer.reports.recorded import recorded_context

    problem = html.missing_dependency()
    if problem is not None:
        print_error(problem)
        return ExitCode.USAGE
    if args.case is not None or args.format != "text":
        print_error("--html cannot be combined with --case or --format")
        return ExitCode.USAGE
    try:
        history, suite = _open_for_reading(args)
    except (UsageError, HistoryError) as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    with history:
        try:
            found = recorded_context(history, suite, args.limit or KEEP_RUNS)
        except HistoryError as exc:
            print_error(str(exc))
            return ExitCode.USAGE
    if found is None:
        print_error(f"no recorded run{f' of {suite}' if suite else ''} in {history.path}")
        return ExitCode.USAGE
    for warning in found.warnings:
        print_warning(warning)
    from cer.sandbox import readset

    # The page holds every expected value it charts: no later run's implementation
    # may read it.
    unrecorded = readset.remember_outputs([str(args.html)])
    if unrecorded is not None:
        print_warning(unrecorded)
    try:
        write_report(html.render(found.context), args.html)
    except OSError as exc:
        print_error(f"cannot write {args.html}: {exc}")
        return ExitCode.USAGE
    run = found.context.run
    sys.stdout.write(
        f"{args.html}: run {run.run_id[:8]} ({run.implementation_id}), "
        f"{len(found.context.history)} recorded runs charted\n"
    )
    return ExitCode.OK


def cmd_history(args: argparse.Namespace) -> ExitCode:
    if args.html is not None:
        return _history_html(args)
    try:
        path, _ = _history_location(args)
        if not path.exists():
            if args.approvals:
                sys.stdout.write(
                    json.dumps({"history": str(path), "approvals": []}) + "\n"
                    if args.format == "json"
                    else f"no approvals recorded (no history at {path})\n"
                )
            elif args.format == "json":
                sys.stdout.write(json.dumps({"history": str(path), "runs": []}) + "\n")
            else:
                sys.stdout.write(f"no runs recorded (no history at {path})\n")
            return ExitCode.OK
        history, suite = _open_for_reading(args)
    except (UsageError, HistoryError) as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    with history:
        try:
            document: Any
            if args.approvals:
                events = history.approvals(suite_path=suite, limit=args.limit or HISTORY_LIMIT)
                if args.format == "json":
                    document = {
                        "history": str(history.path),
                        "approvals": [
                            {
                                "case": e.case_name,
                                "constraints": list(e.constraints),
                                "approver": e.approver,
                                "approved_at": iso_time(e.approved_at_ms),
                                "text_sha256": e.text_hash,
                                "from_observation": e.from_observation,
                                "observed_from": e.observed_from,
                                "suite_path": e.suite_path,
                            }
                            for e in events
                        ],
                    }
                    text = for_json(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
                else:
                    text = text_report.render_approvals(events, str(history.path))
            elif args.case is not None:
                entries = history.case_history(
                    args.case, suite_path=suite, limit=args.limit or HISTORY_LIMIT
                )
                if args.format == "json":
                    document = {
                        "case": args.case,
                        "entries": [
                            {
                                "run_id": e.run_id,
                                "started_at": iso_time(e.started_at_ms),
                                "implementation_id": e.implementation_id,
                                "suite_hash": e.suite_hash,
                                "status": e.status,
                                "fail_class": e.fail_class,
                                "reason": e.reason,
                                "elapsed_ms": e.elapsed_ms,
                                "flaky": e.flaky,
                            }
                            for e in entries
                        ],
                    }
                    text = for_json(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
                else:
                    text = text_report.render_case_history(args.case, entries, str(history.path))
            else:
                records = history.runs(args.limit or HISTORY_LIMIT, suite_path=suite)
                size = _size(history)
                if args.format == "json":
                    document = {
                        "history": str(history.path),
                        "size": size,
                        "runs": [_record_json(r) for r in records],
                    }
                    text = for_json(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
                else:
                    text = text_report.render_history(records, str(history.path)) + _size_line(size)
        except HistoryError as exc:
            print_error(str(exc))
            return ExitCode.USAGE
    sys.stdout.write(text)
    return ExitCode.OK


def _diff_json(diff: RunDiff, before: RunRecord, after: RunRecord) -> dict[str, Any]:
    def changes(items: Sequence[Any]) -> list[dict[str, Any]]:
        return [
            {
                "case_name": c.case_name,
                "before": c.before,
                "after": c.after,
                "before_class": c.before_class,
                "after_class": c.after_class,
                "reason": c.reason,
            }
            for c in items
        ]

    return {
        "before": _record_json(before),
        "after": _record_json(after),
        "regressions": changes(diff.regressions),
        "fixes": changes(diff.fixes),
        "changed": changes(diff.changed),
        "new": changes(diff.new),
        "removed": changes(diff.removed),
        "unchanged": diff.unchanged,
    }


def cmd_diff(args: argparse.Namespace) -> ExitCode:
    try:
        history, suite = _open_for_reading(args)
    except UsageError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    except HistoryError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    with history:
        try:
            if args.run_a is None:
                recent = history.runs(2, suite_path=suite)
                if len(recent) < 2:
                    print_error(
                        f"cer diff needs two recorded runs; {history.path} has {len(recent)}"
                    )
                    return ExitCode.USAGE
                after, before = recent
            else:
                before = history.run(args.run_a, suite_path=suite)
                after = (
                    history.run(args.run_b, suite_path=suite)
                    if args.run_b is not None
                    else history.run("1", suite_path=suite)
                )
            diff = history.diff(before.run_id, after.run_id)
        except HistoryError as exc:
            print_error(str(exc))
            return ExitCode.USAGE
    if args.format == "json":
        text = for_json(json.dumps(_diff_json(diff, before, after), indent=2, ensure_ascii=False))
        text += "\n"
    else:
        text = text_report.render_diff(diff, before, after)
    sys.stdout.write(text)
    return ExitCode.FAILED if diff.regressions else ExitCode.OK

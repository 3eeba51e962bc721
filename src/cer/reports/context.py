"""What every report is written from (:class:`ReportContext`), and the small
formatting helpers the writers share."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cer.constraints import Coverage
from cer.model import RunResult, Suite
from cer.results.conformance import Conformance, conformance_of

if TYPE_CHECKING:
    from cer.history.records import ApprovalEvent, RunRecord


@dataclass(frozen=True)
class ReportContext:
    """What a report is made from."""

    run: RunResult
    suite: Suite
    coverage: Coverage | None = None
    flaky: frozenset[str] | None = None
    """Cases flaky under this implementation id and suite hash; None without history."""
    history: tuple[RunRecord, ...] = ()
    """Recorded runs of the suite, newest first (for the HTML report's chart); empty
    without history or when the report does not need them."""
    approvals: tuple[ApprovalEvent, ...] | None = None
    """The suite's approval events in the history, newest first (the manifest's
    ``approved_by``); None without history."""
    conformance: Conformance | None = None
    """The verdict with its baseline and coverage qualifiers; None to make it from the
    run and its coverage alone."""

    def verdict(self) -> Conformance:
        """The verdict every report states (:mod:`cer.results.conformance`)."""
        if self.conformance is not None:
            return self.conformance
        return conformance_of(self.run, self.coverage)


def iso_time(ms: int) -> str:
    """A millisecond timestamp as ISO 8601 in UTC (``2025-01-02T03:04:05.678+00:00``)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def suite_display_path(suite: Suite) -> str:
    """The suite's path relative to the working directory when below it, with ``/``.

    CI annotations and JUnit ``file`` attributes need repository-relative paths, and
    CI runs from the repository root.
    """
    path = Path(suite.path)
    try:
        relative = path.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return path.as_posix()
    return relative.as_posix()

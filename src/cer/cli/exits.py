"""How the ``cer`` program ends: its exit codes (one table, documented in docs/cli.md),
the code of an interrupted run, and the one-line errors and warnings it writes on
stderr."""

from __future__ import annotations

import enum
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # every command ends here; only a run's end reads these
    from cer.model import RunResult
    from cer.results.baseline import BaselineCheck
    from cer.results.conformance import Conformance


class ExitCode(enum.IntEnum):
    """What ``cer`` tells the shell."""

    OK = 0
    """Every case passed."""
    FAILED = 1
    """At least one case failed or errored; with a baseline, a case failed that it does
    not list (a regression) or a case it lists passed (a stale entry)."""
    USAGE = 2
    """Bad arguments, an unreadable or invalid suite, an unknown format version, a
    suite with no cases, or a history database cer did not make."""
    INCOMPLETE = 3
    """Nothing failed, but some cases were skipped: the run proves nothing complete."""
    UNCOVERED = 4
    """``--require-coverage``: nothing failed unexpectedly, but a constraint of the
    module has no case (or needs repair), or ``verifies`` names an unknown one."""
    INTERRUPTED = 130
    """Interrupted by SIGINT (Ctrl-C); SIGHUP gives 129 and SIGTERM 143 (128 + the
    signal's number), see :class:`Terminated`."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (a CI timeout, a closed terminal): the run is
    stopped exactly as on Ctrl-C, every process of it ended, and ``cer`` exits with
    128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def interrupted_code(exc: KeyboardInterrupt) -> int:
    """The exit code for an interrupted run: 130 for Ctrl-C, else 128 + the signal."""
    if isinstance(exc, Terminated):
        return 128 + exc.signum
    return int(ExitCode.INTERRUPTED)


def interruption(exc: KeyboardInterrupt) -> str:
    if isinstance(exc, Terminated):
        return f"stopped by {signal.Signals(exc.signum).name}"
    return "interrupted"


def exit_code_for(
    run: RunResult,
    conformance: Conformance | None = None,
    *,
    require_coverage: bool = False,
) -> ExitCode:
    """0, 1, 3 or 4 for one run; a shard answers for the cases it ran, not for the cases
    left to the other shards.

    With a baseline (``conformance.baseline``) a failure it lists as it failed is not
    wrong, a regression or a stale entry is; ``require_coverage`` turns a coverage
    shortfall into 4."""
    from cer.results.merge import shard_summary

    summary = shard_summary(run)
    check: BaselineCheck | None = None if conformance is None else conformance.baseline
    if check is not None:
        if not check.clean:
            return ExitCode.FAILED
    elif summary.failed or summary.errored:
        return ExitCode.FAILED
    if require_coverage and conformance is not None and conformance.shortfall() is not None:
        return ExitCode.UNCOVERED
    if summary.skipped:
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def exit_code_for_runs(
    runs: Sequence[RunResult],
    conformances: Sequence[Conformance | None] = (),
    *,
    require_coverage: bool = False,
) -> ExitCode:
    """The worst over several runs: failed, then uncovered, then incomplete, then OK."""
    given = list(conformances) or [None] * len(runs)
    codes = {
        exit_code_for(run, conformance, require_coverage=require_coverage)
        for run, conformance in zip(runs, given, strict=True)
    }
    for code in (ExitCode.FAILED, ExitCode.UNCOVERED, ExitCode.INCOMPLETE):
        if code in codes:
            return code
    return ExitCode.OK


def print_error(message: str) -> None:
    sys.stderr.write(f"cer: error: {message}\n")


def print_warning(message: str) -> None:
    sys.stderr.write(f"cer: warning: {message}\n")

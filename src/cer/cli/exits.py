"""How the ``cer`` program ends: its exit codes (one table, documented in docs/cli.md),
the code of an interrupted run, and the one-line errors and warnings it writes on
stderr."""

from __future__ import annotations

import enum
import signal
import sys
from collections.abc import Sequence

from cer.merge import shard_summary
from cer.model import RunResult


class ExitCode(enum.IntEnum):
    """What ``cer`` tells the shell."""

    OK = 0
    """Every case passed."""
    FAILED = 1
    """At least one case failed or errored."""
    USAGE = 2
    """Bad arguments, an unreadable or invalid suite, an unknown format version, a
    suite with no cases, or a history database cer did not make."""
    INCOMPLETE = 3
    """Nothing failed, but some cases were skipped: the run proves nothing complete."""
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


def exit_code_for(run: RunResult) -> ExitCode:
    """0, 1 or 3 for one run; a shard answers for the cases it ran, not for the cases
    left to the other shards."""
    summary = shard_summary(run)
    if summary.failed or summary.errored:
        return ExitCode.FAILED
    if summary.skipped:
        return ExitCode.INCOMPLETE
    return ExitCode.OK


def exit_code_for_runs(runs: Sequence[RunResult]) -> ExitCode:
    """The worst over several runs: failed before incomplete before OK."""
    codes = {exit_code_for(run) for run in runs}
    for code in (ExitCode.FAILED, ExitCode.INCOMPLETE):
        if code in codes:
            return code
    return ExitCode.OK


def print_error(message: str) -> None:
    sys.stderr.write(f"cer: error: {message}\n")


def print_warning(message: str) -> None:
    sys.stderr.write(f"cer: warning: {message}\n")

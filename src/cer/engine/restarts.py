"""Restarts of a run's long-lived process (a Python worker, a command harness) after it
was lost.

A lost process costs the case it was running, never the cases after it: each of them
still gets its own try on a new process. Restarts that follow each other with no case
answered between them wait a little first, longer each time (so that a cause outside
the case, a full process table say, can pass), within a budget sized from the run: at
most :data:`WAIT_PER_CASE` per case of the run and :data:`WAIT_CAP` in all, and never
more than the restarts themselves took to start, so that a process that crashes at once
on every case costs a small multiple of its start-up, not a fixed wait per case. Once
the budget is spent, restarts no longer wait. The run's notes say how many restarts
there were and the time they took (:meth:`Restarts.note`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = [
    "BACKOFF_FIRST",
    "BACKOFF_MAX",
    "START_ATTEMPTS",
    "WAIT_CAP",
    "WAIT_PER_CASE",
    "Restarts",
]

BACKOFF_FIRST = 0.05
"""Seconds waited before the second restart in a row; each one after waits twice as long."""
BACKOFF_MAX = 1.0
"""The longest single wait before a restart."""
WAIT_PER_CASE = 0.05
"""Seconds of waiting between restarts allowed per case of the run."""
WAIT_CAP = 10.0
"""Seconds of waiting between restarts allowed in a whole run, however many cases."""
START_ATTEMPTS = 3
"""Failed starts in a row (the process could not be started again, or could not load
the implementation again) after which it truly cannot be started: the cases left are
then errored ``not run`` with the cause. Failed starts also share one allowance of
time in a whole run, :data:`START_ATTEMPTS` times the start timeout
(:meth:`Restarts.may_retry`): a process whose restarts hang until the start timeout,
but not in a row, would otherwise cost the run that timeout for every case."""

_SLICE = 0.05
"""The longest sleep between two checks for cancellation while waiting to restart."""


class Restarts:
    """How often one run restarted its process, the time that took, and the backoff."""

    def __init__(self, what: str, cases: int) -> None:
        self.what = what
        """What is restarted, as the note names it: ``the harness``, ``a worker``."""
        self.count = 0
        self.starting = 0.0
        """Seconds spent starting the restarted processes (up to their handshake)."""
        self.waited = 0.0
        """Seconds spent waiting before restarts."""
        self.budget = min(WAIT_CAP, WAIT_PER_CASE * max(1, cases))
        """The most this run waits before restarts, in all."""
        self.failed_starts = 0
        """Restarts in a row that could not start the process."""
        self.failed_time = 0.0
        """Seconds the restarts that failed took, in the whole run."""
        self.gave_up = False
        """The process could not be started again: the cases left were not run (the
        note then does not say that every case got its own try)."""

    def delay(self, in_a_row: int) -> float:
        """How long to wait before the restart that follows ``in_a_row`` losses with no
        case answered between them: nothing after one; then :data:`BACKOFF_FIRST`,
        doubling up to :data:`BACKOFF_MAX`; never past what is left of the budget, nor
        past the time the restarts so far took to start."""
        if in_a_row < 2:
            return 0.0
        wanted: float = min(BACKOFF_FIRST * 2.0 ** (in_a_row - 2), BACKOFF_MAX)
        return max(0.0, min(wanted, self.budget - self.waited, self.starting - self.waited))

    def take_delay(self, in_a_row: int) -> float:
        """:meth:`delay`, counted as waited (for a caller that waits without blocking)."""
        delay = self.delay(in_a_row)
        self.waited += delay
        return delay

    def wait(self, in_a_row: int, check_cancel: Callable[[], None]) -> None:
        """Wait :meth:`delay` seconds, checking for cancellation meanwhile."""
        until = time.monotonic() + self.take_delay(in_a_row)
        while True:
            check_cancel()
            left = until - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, _SLICE))

    def started(self, seconds: float) -> None:
        """One restart, which took ``seconds`` to start the process (failed or not)."""
        self.count += 1
        self.starting += max(0.0, seconds)

    def start_failed(self, seconds: float) -> None:
        """A restart that could not start the process (or load the implementation),
        after ``seconds``."""
        self.started(seconds)
        self.failed_starts += 1
        self.failed_time += max(0.0, seconds)

    @staticmethod
    def start_allowance(start_timeout: float) -> float:
        """The seconds failed starts may take in a whole run: :data:`START_ATTEMPTS`
        times ``start_timeout``."""
        return START_ATTEMPTS * start_timeout

    def allowance_left(self, start_timeout: float) -> bool:
        """Whether the failed starts so far took less than :meth:`start_allowance`."""
        return self.failed_time < self.start_allowance(start_timeout)

    def may_retry(self, start_timeout: float) -> bool:
        """Whether a failed start is tried again: fewer than :data:`START_ATTEMPTS`
        failed in a row, and some of the run's allowance for failed starts is left
        (:meth:`allowance_left`)."""
        return self.failed_starts < START_ATTEMPTS and self.allowance_left(start_timeout)

    def why_not(self, start_timeout: float) -> str:
        """Why a failed start was not tried again (see :meth:`may_retry`), in words."""
        if self.failed_starts >= START_ATTEMPTS:
            return f"{self.failed_starts} attempts in a row"
        return (
            f"the restarts that failed took {self.failed_time:.2f} s in this run, the "
            f"{self.start_allowance(start_timeout):g} s they may take"
        )

    def note(self) -> str | None:
        """The run's note about its restarts, or None when there were none."""
        if not self.count:
            return None
        times = "time" if self.count == 1 else "times"
        text = (
            f"{self.what} was started again {self.count} {times} after it was lost or killed "
            f"({self.starting:.2f} s starting it again, {self.waited:.2f} s waiting "
            "between restarts); "
        )
        text += (
            "then it could not be started again, and the cases left were not run"
            if self.gave_up
            else "every case after a lost one still got its own try"
        )
        if self.waited >= self.budget > 0:
            text += (
                f" (the {self.budget:g} s allowed for waiting was used up: later "
                "restarts did not wait)"
            )
        return text

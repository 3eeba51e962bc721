"""The supervisor's own resource limits, held as they were when the run started.

A process of the same user may change another's limits (``prlimit``): a CPU limit lets
the kernel kill the supervisor mid-run (no report, no history), a file-size limit keeps
the run from being recorded. The sandbox's seccomp filter refuses that to the
implementation's side (:mod:`cer.sandbox.seccomp`); this is the supervisor's own check, for
a run without the filter too: the limits are read when the run starts and compared
after each case (when no filter stands in the way) and when the run ends, and one that
changed is set back (the run's notes say so). One that
cannot be set back (a lowered hard limit, without the privilege to raise it) stops the
run with :class:`LimitsChanged`: a run the kernel may cut short is not run on.
"""

from __future__ import annotations

import resource

__all__ = ["LimitsChanged", "OwnLimits"]

_NAMES = tuple(sorted(name for name in dir(resource) if name.startswith("RLIMIT_")))


class LimitsChanged(RuntimeError):
    """A limit of the supervisor changed during the run and cannot be set back."""


class OwnLimits:
    """This process's resource limits at one moment, and the way back to them."""

    __slots__ = ("_limits", "changed", "each_case")

    def __init__(self) -> None:
        self._limits = tuple(
            (name, number, resource.getrlimit(number))
            for name in _NAMES
            if (number := getattr(resource, name)) is not None
        )
        self.changed: list[str] = []
        """The limits set back so far, by name (``RLIMIT_CPU``), each once."""
        self.each_case = True
        """Whether :meth:`after_case` checks: False once every process of the
        implementation's side is under the seccomp filter, which refuses ``prlimit`` on
        any process but the caller, so that nothing of it can change these limits (the
        check when the run ends stays, for anything else)."""

    def after_case(self) -> None:
        """:meth:`restore`, when something of the implementation's side could have
        changed a limit (see :attr:`each_case`): a case's lowered CPU limit would let the
        kernel end the run before the next case."""
        if self.each_case:
            self.restore()

    def restore(self) -> bool:
        """Set back every limit that changed since this was made; True when one had.
        LimitsChanged when one cannot be set back."""
        found = False
        for name, number, value in self._limits:
            now = resource.getrlimit(number)
            if now == value:
                continue
            found = True
            try:
                resource.setrlimit(number, value)
            except (ValueError, OSError) as exc:
                raise LimitsChanged(
                    f"cer's own resource limit {name} was changed during the run from "
                    f"{_shown(value)} to {_shown(now)} by another process, and cannot be "
                    f"set back ({exc}): the run is stopped, since the kernel could end it "
                    "before its results are reported"
                ) from None
            if name not in self.changed:
                self.changed.append(name)
        return found

    def note(self) -> str:
        """The run's note about the limits set back, or empty."""
        if not self.changed:
            return ""
        return (
            f"cer's own resource limits ({', '.join(self.changed)}) were changed by another "
            "process during the run and were set back"
        )


def _shown(value: tuple[int, int]) -> str:
    def one(limit: int) -> str:
        return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)

    return f"{one(value[0])} (soft), {one(value[1])} (hard)"

"""cer's verdict against the reports pytest produced: the outcome each cer item must
have, what pytest actually reported, and the mismatches.

The pytest process also runs the project's ``conftest.py`` files and every other
plugin: a hook can rewrite a report (a ``pytest_runtest_makereport`` wrapper flipping it
to passed, a ``pytest_runtest_logreport`` or ``pytest_report_teststatus``
implementation), skip an item cer judged, or replace the plugin's own code. None of it
changes cer's verdict, which the plugin holds apart (the results of its cer runs). This
module says what outcome that verdict gives each item, reads the outcome a report
claims (as it was logged, as it is now, and as the terminal counted it), and which
functions of the plugin must still be its own; the plugin fails the session on any
difference (docs/pytest.md, "When a report is not cer's verdict")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import FunctionType, ModuleType
from typing import Any, Literal

from cer.model import CaseResult, Status
from cer.results.baseline import never_ran

Outcome = Literal["passed", "failed", "error", "skipped", "xfailed"]
"""What an item's reports add up to, in the words of pytest's summary."""

PHASES = ("setup", "call")
"""The phases whose reports decide an item's outcome; a teardown report of a cer item
carries only what the plugin adds there (a mismatch)."""


def expected_outcome(result: CaseResult | None, failure: str | None, listed: str | None) -> Outcome:
    """The outcome cer's verdict gives an item: from its case's ``result`` (None when
    cer did not run it, which the item reports as an error), the ``failure`` of a run
    that could not start, and the status its baseline entry lists (``fail`` or
    ``errored``; None without one), as ``xfail(strict=True)`` with that status's
    exception turns it (docs/pytest.md, "Known failures")."""
    if failure is not None or result is None or never_ran(result):
        return "error"
    status = result.status
    if status is Status.SKIPPED:
        return "skipped"
    if listed is None:
        if status is Status.PASS:
            return "passed"
        return "failed" if status is Status.FAIL else "error"
    if status is Status.PASS:
        return "failed"  # XPASS(strict): the entry is stale
    if status is Status.FAIL:
        return "xfailed" if listed == "fail" else "failed"
    return "xfailed" if listed == "errored" else "error"


def phase_outcome(report: Any) -> str:
    """The outcome one report claims, in the terminal's categories: ``""`` for a setup
    or teardown that passed."""
    when = getattr(report, "when", "")
    outcome = getattr(report, "outcome", "")
    xfail = hasattr(report, "wasxfail")
    if outcome == "failed":
        return "failed" if when == "call" else "error"
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if outcome == "passed":
        if when != "call":
            return ""
        return "xpassed" if xfail else "passed"
    return f"an unknown outcome {str(outcome)[:40]!r}"


def item_outcome(phases: Mapping[str, str]) -> str:
    """What the reports of one item's phases add up to: a setup that did not pass
    decides it, else the call; ``no call report`` when neither says anything."""
    setup = phases.get("setup", "")
    if setup:
        return setup
    call = phases.get("call")
    return call if call is not None else "no call report"


@dataclass
class Logged:
    """The reports of one cer item, as the plugin saw each logged."""

    phases: dict[str, str] = field(default_factory=dict)
    """Each phase's outcome at the moment it was logged."""
    reports: dict[str, Any] = field(default_factory=dict)
    """Each phase's report, read again later: a hook that changes it after the
    plugin saw it is caught too."""

    def claims(self) -> dict[str, str]:
        """The outcomes the item's reports claim: as logged, and as they are now."""
        now = {when: phase_outcome(report) for when, report in self.reports.items()}
        return {"as logged": item_outcome(self.phases), "as it is now": item_outcome(now)}


def terminal_phases(
    stats: Mapping[str, Iterable[Any]], nodeids: set[str]
) -> dict[str, dict[str, str]]:
    """Each of ``nodeids``' phases by the terminal's category (what its summary line
    counted): a ``pytest_report_teststatus`` hook chooses it."""
    found: dict[str, dict[str, str]] = {}
    for category, reports in stats.items():
        for report in reports:
            nodeid = getattr(report, "nodeid", None)
            when = getattr(report, "when", None)
            if nodeid in nodeids and when in PHASES:
                found.setdefault(nodeid, {})[when] = str(category)
    return found


@dataclass(frozen=True)
class Mismatch:
    """A cer item whose reports say something other than cer's verdict."""

    nodeid: str
    expected: Outcome
    claimed: str
    where: str
    """Which reading claimed it: ``as logged``, ``as it is now``, ``in the terminal``."""

    def text(self) -> str:
        return (
            f"{self.nodeid}: pytest's report says {self.claimed} ({self.where}), "
            f"cer's verdict is {self.expected}"
        )


def mismatches_of(
    nodeid: str,
    expected: Outcome,
    logged: Logged | None,
    terminal: Mapping[str, str] | None = None,
) -> list[Mismatch]:
    """Every reading of ``nodeid``'s reports that differs from ``expected``."""
    claims = logged.claims() if logged is not None else {}
    if terminal is not None:
        claims["in the terminal"] = item_outcome(terminal)
    return [
        Mismatch(nodeid, expected, claimed, where)
        for where, claimed in claims.items()
        if claimed != expected
    ]


def mismatch_text(found: Iterable[Mismatch]) -> str:
    """The lines saying which items' reports are not cer's verdict."""
    return "\n".join(each.text() for each in found)


def _body(value: object) -> tuple[object, ...]:
    """What a function runs: its code and its defaults (a replaced ``__code__`` is a
    replaced function, though the object is the same); a class stands for itself."""
    function = getattr(value, "__func__", value)
    if not isinstance(function, FunctionType):
        return ()
    return (function.__code__, function.__defaults__, function.__kwdefaults__)


@dataclass(frozen=True)
class Pinned:
    """The plugin's own functions as they were when it was imported (before any
    ``conftest.py``): a class attribute or module global that is no longer the same
    object, or a function whose code or defaults were swapped, was replaced at run
    time, and the plugin's outcomes cannot be vouched for."""

    functions: tuple[tuple[str, object, str, object, tuple[object, ...]], ...]
    """``(where, owner, name, value, body)``: ``owner.__dict__[name]`` must be ``value``,
    still running ``body`` (:func:`_body`)."""

    @staticmethod
    def of(owners: Iterable[object], whole: Iterable[ModuleType] = ()) -> Pinned:
        """Every function defined on ``owners`` (classes and modules), and every class
        a module names, pinned; of the ``whole`` modules (the plugin's own), every
        global but the interpreter's ``__dunder__`` ones, constants too (a conftest
        setting the plugin's table of exit codes to ``()`` is caught)."""
        functions = []
        whole = tuple(whole)
        for owner in (*owners, *whole):
            where = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", "?")
            module = isinstance(owner, ModuleType)
            everything = any(owner is each for each in whole)
            for name, value in vars(owner).items():
                dunder = name.startswith("__") and name.endswith("__")
                function = isinstance(value, FunctionType | staticmethod | classmethod)
                if (everything and not dunder) or function or (module and isinstance(value, type)):
                    functions.append((str(where), owner, name, value, _body(value)))
        return Pinned(tuple(functions))

    def replaced(self) -> tuple[str, ...]:
        """The pinned functions that are no longer the plugin's own."""
        out = []
        for where, owner, name, value, body in self.functions:
            now = _body(value)
            if (
                vars(owner).get(name) is not value
                or len(now) != len(body)
                or any(a is not b for a, b in zip(now, body, strict=True))
            ):
                out.append(f"{where}.{name}")
        return tuple(out)

"""A known-failures baseline as the case list reads it: which cases it lists for a lane's
implementation, and what each row's latest status makes of its entry.

``cer-tui`` takes the same baseline as ``cer run`` (``--baseline FILE`` or ``baseline``
in ``[tool.cer]``, see docs/ci.md) and judges every row the way
:func:`cer.results.baseline.check_run` judges a run: a listed case failing as listed is
*known* (the list dims it and says ``known``), a listed case that passes is *stale*
(its entry must go), a listed case failing otherwise, or an unlisted failure, is a
*regression* and shown as any failure is. Pure Python, no Textual.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from cer.engine.options import RunOptions
from cer.model import Status, Suite
from cer.results.baseline import Baseline, BaselineEntry, unmatched_entries
from cer.results.labels import short_label

Listing = Literal["known", "stale", "otherwise"]
"""What a listed case's latest status makes of its entry: ``known`` (it failed as
listed), ``stale`` (it passed: remove the entry), ``otherwise`` (it failed with the
other status: a regression of a listed case)."""

KNOWN_MARK = "known"
"""The word a known failure's row carries in the case list."""
STALE_MARK = "stale"
"""The word a row carries whose baseline entry has gone stale (the case passes)."""

_LISTED_STATUS = {"fail": Status.FAIL, "errored": Status.ERRORED}


def lane_aliases(label: str, options: RunOptions, others: Iterable[str] = ()) -> tuple[str, ...]:
    """The names an entry's ``implementation`` may use for a lane, as
    :func:`cer.results.baseline.implementation_names` gives them for a run: its label, the
    implementation as given and its automatic short label, but for the labels of the
    other lanes (``others``), which name those lanes only."""
    taken = frozenset(others) - {label}
    names = [label, options.impl, short_label(options.kind, options.impl)]
    return tuple(dict.fromkeys(name for name in names if name and name not in taken))


@dataclass(frozen=True)
class KnownFailures:
    """One lane's view of a baseline file: each case's entry for its implementation."""

    path: str
    entries: Mapping[str, BaselineEntry] = field(default_factory=dict)
    """Case name → the entry that lists it (exact names before globs, then file order)."""
    unmatched: tuple[str, ...] = ()
    """One message per entry naming no case of the suite (``FILE:LINE: case 'x' names
    no case of evals.toml``): ``cer run`` refuses such a file; the screen says it."""

    @classmethod
    def of(cls, baseline: Baseline, suite: Suite, aliases: Iterable[str]) -> KnownFailures:
        """Look every case of ``suite`` up in ``baseline`` once (entries for another
        implementation left out), so that a row's listing is a dictionary lookup."""
        names = frozenset(case.name for case in suite.cases)
        implementation = tuple(aliases)
        entries = {}
        for case in suite.cases:
            entry = baseline.entry_for(case.name, names, implementation)
            if entry is not None:
                entries[case.name] = entry
        return cls(str(baseline.path), entries, unmatched_entries(baseline, suite))

    def entry(self, name: str) -> BaselineEntry | None:
        return self.entries.get(name)

    def listing(self, name: str, status: Status | None, *, not_run: bool = False) -> Listing | None:
        """What ``status`` makes of the case's entry; None when the case is not listed,
        has no result yet, or was skipped (not run: neither known nor stale). A case
        the runner never ran (``not_run``: the implementation could not be loaded) is
        never the failure an entry lists, as ``cer run`` holds."""
        entry = self.entries.get(name)
        if entry is None or status is None or status is Status.SKIPPED:
            return None
        if status is Status.PASS:
            return "stale"
        if not_run:
            return "otherwise"
        return "known" if _LISTED_STATUS[entry.status] is status else "otherwise"

    def where(self, entry: BaselineEntry) -> str:
        """``known-failures.toml:12`` for the screen."""
        return f"{self.path}:{entry.line}" if entry.line else self.path

    def note(self, name: str, status: Status | None, *, not_run: bool = False) -> str | None:
        """The line the Reason pane adds for a listed case: why it is known, that its
        entry is stale, or that it fails otherwise than listed; None when not listed."""
        listing = self.listing(name, status, not_run=not_run)
        entry = self.entries.get(name)
        if listing is None or entry is None:
            return None
        if listing == "known":
            link = f" ({entry.link})" if entry.link else ""
            return f"known failure: {entry.reason}{link} ({self.where(entry)})"
        if listing == "stale":
            return f"stale: {name} passes: remove it from the baseline ({self.where(entry)})"
        if not_run:
            return f"regression: listed as {entry.status}, but it was not run ({self.where(entry)})"
        observed = "errored" if status is Status.ERRORED else "fail"
        return f"regression: listed as {entry.status}, now {observed} ({self.where(entry)})"

"""Which cases of a suite a run executes; the rest are reported skipped as deselected."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

from cer.model import Case


@dataclass(frozen=True)
class Selection:
    """Case filters. Each kind of filter narrows the run (AND); values of one kind
    widen it (OR). An empty selection selects every case.

    ``names`` selects exact case names (rerun-failed uses it); ``case_globs`` are shell
    patterns on names; ``tags`` are shell patterns on tags (``upstream-section:*``);
    ``substrings`` match anywhere in the name (``-k``).
    """

    case_globs: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    substrings: tuple[str, ...] = ()
    names: frozenset[str] | None = None
    chosen_by: str = ""
    """How ``names`` were chosen, for the run's conditions to say (``--failed: ...``,
    a rerun or the run pattern of cer-tui, pytest's selection); selects nothing."""

    @property
    def is_everything(self) -> bool:
        return (
            not (self.case_globs or self.categories or self.classes or self.tags or self.substrings)
            and self.names is None
        )

    def selects(self, case: Case) -> bool:
        if self.names is not None and case.name not in self.names:
            return False
        if self.case_globs and not any(
            fnmatch.fnmatchcase(case.name, pattern) for pattern in self.case_globs
        ):
            return False
        if self.categories and case.category not in self.categories:
            return False
        if self.classes and case.case_class not in self.classes:
            return False
        if self.tags and not any(
            fnmatch.fnmatchcase(tag, pattern) for tag in case.tags for pattern in self.tags
        ):
            return False
        return not self.substrings or any(s in case.name for s in self.substrings)

    def unmatched(self, cases: Sequence[Case]) -> str | None:
        """Why this selection is a usage error for ``cases``, or None when it is not.

        A ``--case`` pattern or ``-k`` text that matches no case's name is most likely
        a typo, and a selection that leaves no case at all would run nothing and look
        like a clean run; both are refused rather than reported as "everything
        deselected". ``names`` (rerun-failed) is not the user's typing and is not judged.
        """
        names = [case.name for case in cases]
        for pattern in self.case_globs:
            if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
                return f"--case {pattern!r} matches no case of the suite"
        for text in self.substrings:
            if not any(text in name for name in names):
                return f"-k {text!r} matches no case of the suite"
        if self.is_everything or self.names is not None:
            return None
        if not any(self.selects(case) for case in cases):
            return "the case selection (--case, --category, --class, --tag, -k) matches no case"
        return None


def name_matches(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the TUI's run pattern: a shell pattern when it holds
    ``*``, ``?`` or ``[``, else a case-insensitive substring (jest's ``t``)."""
    if any(mark in pattern for mark in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern.casefold() in name.casefold()

"""Which cases of a suite a run executes; the rest are reported skipped as deselected."""

from __future__ import annotations

import fnmatch
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

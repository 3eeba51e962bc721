"""The read-only view of a case that an implementation's ``run_case`` receives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CaseView:
    """What an implementation may know about the case it runs: never the expectation.

    ``input`` is the case's own private copy, decoded afresh in the case's process, so
    mutating it cannot affect any other case.
    """

    name: str
    case_class: str
    category: str
    input: dict[str, Any]
    tags: tuple[str, ...]

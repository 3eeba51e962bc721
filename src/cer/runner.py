"""The supervisor: runs a suite against an implementation and reports the truth.

(Interface only for now; the engine lands next.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cer.events import RunEvent
from cer.model import RunResult, Suite
from cer.selection import Selection


class RunCancelled(Exception):
    """The run was cancelled through its cancel event before it finished."""


@dataclass(frozen=True)
class RunOptions:
    impl: str
    """``MODULE:ATTR`` of the implementation under test (ATTR may be dotted)."""
    paths: tuple[str, ...] = ()
    timeout: float = 10.0
    isolation: str = "fork"
    max_memory: int | None = None
    capture_limit: int = 65536
    selection: Selection = field(default_factory=Selection)
    category_models: Mapping[str, str] = field(default_factory=dict)
    """Extra category → built-in model mappings (``[tool.cer.categories]``)."""


def run_suite(
    suite: Suite,
    options: RunOptions,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    cancel: threading.Event | None = None,
) -> RunResult:
    """Run every case of ``suite`` and return one result per case in declared order."""
    raise NotImplementedError

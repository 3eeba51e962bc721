"""The detail panes' styles: resolved from the theme on the event loop, then handed to
the pure renderers (the case's details and the coverage view) in their threads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.style import Style

from cer.model import Status
from cer.tui.state.diffing import DiffStyles


@dataclass(frozen=True)
class DetailStyles:
    """Styles for the panes, resolved from the theme on the event loop."""

    diff: DiffStyles = field(default_factory=DiffStyles)
    heading: Style = field(default_factory=lambda: Style(bold=True))
    label: Style = field(default_factory=lambda: Style(dim=True))
    path: Style = field(default_factory=lambda: Style(bold=True))
    stderr: Style = field(default_factory=Style)
    traceback: Style = field(default_factory=lambda: Style(color="red"))
    statuses: Mapping[Status | None, Style] = field(default_factory=dict)

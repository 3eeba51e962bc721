"""The detail panes of the selected case: Reason, Diff, Output, Case, Coverage, as tabs.

The app composes the panes inside (a ``TabPane`` each, holding the pane ``#NAME-pane``);
this widget shows a rendering in all of them at once, cycles them and focuses the one
on view.
"""

from __future__ import annotations

from typing import Literal, get_args

from textual.widgets import TabbedContent

from cer.tui.messages import DetailsRendered
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.output_pane import OutputPane
from cer.tui.widgets.text_pane import TextPane

Pane = Literal["reason", "diff", "output", "case", "coverage"]
PANES: tuple[Pane, ...] = get_args(Pane)
"""The panes in tab order."""


class DetailPanes(TabbedContent):
    """The tabs of the detail panes."""

    def show(self, details: DetailsRendered) -> None:
        """Show one rendering of the selected case in every pane."""
        self.query_one("#reason-pane", TextPane).show(details.reason)
        self.query_one("#diff-pane", DiffPane).set_lines(details.diff)
        self.query_one("#output-pane", OutputPane).set_lines(details.output)
        self.query_one("#case-pane", TextPane).show(details.case)
        self.query_one("#coverage-pane", TextPane).show(details.coverage)

    def cycle(self, step: int = 1) -> None:
        """Bring the next pane on view (``step=-1``: the previous one)."""
        current = PANES.index(self.active) if self.active in PANES else 0
        self.active = PANES[(current + step) % len(PANES)]

    def focus_active(self) -> None:
        """Move the focus into the pane on view."""
        self.query_one(f"#{self.active}-pane").focus()

"""The detail panes of the selected case, as tabs: one per entry of the pane table.

The table is :data:`cer.tui.state.details.PANES` (each pane's id, label, widget and
part of the case's :class:`~cer.tui.state.details.Details`). :class:`DetailPanes`
composes its tabs from it (a ``TabPane`` ``#NAME`` each, holding the pane
``#NAME-pane``), takes the whole rendering through its ``details`` reactive and shows
every pane's part of it at once, cycles them and focuses the one on view.
"""

from __future__ import annotations

from textual.reactive import var
from textual.widgets import TabbedContent, TabPane

from cer.tui.state import details as table
from cer.tui.state.details import Details, Pane, PaneWidget
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.line_pane import LinePane
from cer.tui.widgets.output_pane import OutputPane
from cer.tui.widgets.text_pane import TextPane

WIDGETS: dict[PaneWidget, type[TextPane] | type[LinePane]] = {
    "text": TextPane,
    "diff": DiffPane,
    "output": OutputPane,
}
"""The widget class of each kind of pane."""


class DetailPanes(TabbedContent):
    """The tabs of the detail panes, one per entry of the pane table."""

    details: var[Details | None] = var(None, always_update=True)
    """The selected case's rendering; set it and every pane shows its part (again,
    scrolled to the top, even when it is the same)."""

    def __init__(self, *, id: str | None = None, initial: str = "") -> None:
        super().__init__(id=id, initial=initial)
        self.panes: tuple[Pane, ...] = table.PANES
        """The pane table as it was when the tabs were composed."""
        for pane in self.panes:
            widget = WIDGETS[pane.widget](id=f"{pane.name}-pane")
            self.compose_add_child(TabPane(pane.title, widget, id=pane.name))

    def watch_details(self, details: Details | None) -> None:
        if details is None:
            return
        for pane in self.panes:
            part = pane.part(details)
            if isinstance(part, list):
                self.query_one(f"#{pane.name}-pane", LinePane).set_lines(part)
            else:
                self.query_one(f"#{pane.name}-pane", TextPane).show(part)

    def cycle(self, step: int = 1) -> None:
        """Bring the next pane on view (``step=-1``: the previous one)."""
        names = [pane.name for pane in self.panes]
        current = names.index(self.active) if self.active in names else 0
        self.active = names[(current + step) % len(names)]

    def focus_active(self) -> None:
        """Move the focus into the pane on view."""
        self.query_one(f"#{self.active}-pane").focus()

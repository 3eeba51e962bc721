"""The Matrix view (``m``): cases by implementations, disagreements first.

A modal screen over the main one, like the group-by view: a title, the labels' header,
a Line API table that draws only the lines on screen (a matrix has as many rows as the
suite has cases), and per-implementation totals with a legend. ``enter`` closes it on
the highlighted case, which the main list then selects so that the detail panes show
each implementation's observation side by side. ``f`` narrows the view to what one
implementation fails (then errors on, knows to fail, skips; then the next one's), ``a``
shows every case again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from cer.model import Status
from cer.results.matrix import CellState, Matrix
from cer.tui.state.matrix_layout import filters
from cer.tui.widgets.matrix_table import MatrixTable


class MatrixScreen(ModalScreen[str | None]):
    """Dismisses with the chosen case's name, or None when left with ``esc``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,m,q", "leave", "Close", key_display="esc"),
        Binding("enter", "choose", "Show the case"),
        Binding("f", "filter", "Only what one fails"),
        Binding("a", "all", "Every case"),
    ]

    def __init__(
        self,
        matrix: Matrix,
        suite_name: str,
        current: str | None = None,
        statuses: Mapping[Status | None, Style] | None = None,
    ) -> None:
        super().__init__()
        self.matrix = matrix
        self.suite_name = suite_name
        self.current = current
        """The case to highlight first (the one selected in the list)."""
        self.statuses = statuses
        self.only: tuple[int, CellState] | None = None
        """The implementation and state the view is narrowed to (``f``), or None."""

    def compose(self) -> ComposeResult:
        # The box and its title take the group-by view's ids, so that every theme
        # draws both views alike.
        with Vertical(id="group-box", classes="matrix-box"):
            yield Static("", id="group-title")
            yield MatrixTable(self.matrix, statuses=self.statuses, id="matrix-table")
            yield Static("", id="matrix-totals")

    @property
    def table(self) -> MatrixTable:
        return self.query_one(MatrixTable)

    def on_mount(self) -> None:
        table = self.table
        table.focus()
        self._fill(self.matrix, self.current)

    def update(self, matrix: Matrix) -> None:
        """Show a newer matrix (a run finished while the view was open)."""
        self._fill(matrix, self.table.cursor_name)

    def _fill(self, matrix: Matrix, keep: str | None) -> None:
        self.matrix = matrix
        if self.only is not None and self.only not in filters(matrix):
            self.only = None
        layout = self.table.show(matrix, keep=keep, only=self.only)
        self.query_one("#group-title", Static).update(Text(layout.title(self.suite_name)))
        totals = Text("\n").join(layout.totals())
        self.query_one("#matrix-totals", Static).update(totals)

    def action_filter(self) -> None:
        """Narrow the view to the next implementation's state some case has: what the
        first implementation fails, errors on, knows to fail or skips, then the next
        one's; after the last, every case again."""
        choices = filters(self.matrix)
        if not choices:
            self.notify("every implementation passed every case", markup=False)
            return
        position = choices.index(self.only) + 1 if self.only in choices else 0
        self.only = choices[position] if position < len(choices) else None
        self._fill(self.matrix, self.table.cursor_name)

    def action_all(self) -> None:
        self.only = None
        self._fill(self.matrix, self.table.cursor_name)

    def action_leave(self) -> None:
        self.dismiss(None)

    def action_choose(self) -> None:
        self.dismiss(self.table.cursor_name)

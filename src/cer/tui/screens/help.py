"""The ``?`` screen: every key and what it does, from the same table as the bindings."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from cer.tui.keys import help_rows


class HelpScreen(ModalScreen[None]):
    """A modal list of keys; any of escape, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close", key_display="esc"),
    ]

    def __init__(self, several: bool = False) -> None:
        super().__init__()
        self.several = several
        """List the keys of several implementations too."""

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(justify="right", style="bold")
        table.add_column()
        for keys, help_text in help_rows(self.several):
            table.add_row(keys, help_text)
        with Vertical(id="help-box"):
            yield Static("Keys", id="help-title")
            yield Static(table, id="help-keys")
            yield Static("esc, q or ? closes this help", id="help-hint")

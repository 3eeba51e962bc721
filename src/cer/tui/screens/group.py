"""The group-by view: pass rates per category, case class, severity and tag prefix.

Choosing a group narrows the case list to it; choosing "All cases" clears the group.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from cer.tui.state.board import GroupKey, GroupSection, GroupStats

CLEAR_GROUP = "__all__"


def describe(stats: GroupStats, label_width: int) -> Text:
    """One group as a row: name, pass rate and counts with symbols."""
    rate = stats.pass_rate
    rate_text = "   –" if rate is None else f"{rate * 100:3.0f}%"
    text = Text()
    label = stats.key.value
    if len(label) > label_width:
        label = label[: label_width - 1] + "…"
    text.append(f"  {label:<{label_width}}  ")
    text.append(f"{rate_text}  ", "bold")
    text.append(f"✔ {stats.passed:>5}  ✘ {stats.failed:>5}  ‼ {stats.errored:>5}  ")
    text.append(f"○ {stats.skipped:>5}  of {stats.total}")
    return text


class GroupScreen(ModalScreen[GroupKey | None | bool]):
    """Dismisses with the chosen :class:`GroupKey`, None for all cases, False when left."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,g,q", "leave", "Close", key_display="esc"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, sections: tuple[GroupSection, ...], current: GroupKey | None) -> None:
        super().__init__()
        self.sections = sections
        self.current = current
        self._keys: dict[str, GroupKey] = {}

    def compose(self) -> ComposeResult:
        options: list[Option | None] = [Option(Text("  All cases", "bold"), id=CLEAR_GROUP)]
        width = max((len(g.key.value) for s in self.sections for g in s.groups), default=10)
        width = min(max(width, 10), 40)
        for index, section in enumerate(self.sections):
            options.append(None)
            options.append(Option(Text(section.title, "bold underline"), disabled=True))
            for number, stats in enumerate(section.groups):
                option_id = f"g{index}-{number}"
                self._keys[option_id] = stats.key
                options.append(Option(describe(stats, width), id=option_id))
        with Vertical(id="group-box"):
            yield Static("Group by — enter narrows the list to a group", id="group-title")
            yield OptionList(*options, id="group-options")

    def on_mount(self) -> None:
        option_list = self.query_one(OptionList)
        if self.current is not None:
            for option_id, key in self._keys.items():
                if key == self.current:
                    option_list.highlighted = option_list.get_option_index(option_id)
                    break
        option_list.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        option_id = event.option.id
        if option_id == CLEAR_GROUP:
            self.dismiss(None)
        elif option_id is not None:
            self.dismiss(self._keys[option_id])

    def action_leave(self) -> None:
        self.dismiss(False)

    def action_cursor_down(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one(OptionList).action_cursor_up()

"""The group-by view: pass rates per category, case class, severity and tag prefix.

Choosing a group narrows the case list to it; choosing "All cases" clears the group.
The figures follow the results as they land: the run screen hands the screen new
:attr:`GroupScreen.sections` whenever its board changes, and the list is redrawn with
the same group highlighted.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.reactive import reactive
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

    sections: reactive[tuple[GroupSection, ...]] = reactive((), init=False)
    """The groups and their counts; set it (as the run screen does after every batch of
    results) and the list shows the new figures, the same group still highlighted."""

    def __init__(self, sections: tuple[GroupSection, ...], current: GroupKey | None) -> None:
        super().__init__()
        self.set_reactive(GroupScreen.sections, sections)
        self.current = current
        self._keys: dict[str, GroupKey] = {}

    def _options(self) -> list[Option | None]:
        """The list's options for :attr:`sections` (and :attr:`_keys` to match)."""
        options: list[Option | None] = [Option(Text("  All cases", "bold"), id=CLEAR_GROUP)]
        width = max((len(g.key.value) for s in self.sections for g in s.groups), default=10)
        width = min(max(width, 10), 40)
        self._keys = {}
        for index, section in enumerate(self.sections):
            options.append(None)
            options.append(Option(Text(section.title, "bold underline"), disabled=True))
            for number, stats in enumerate(section.groups):
                option_id = f"g{index}-{number}"
                self._keys[option_id] = stats.key
                options.append(Option(describe(stats, width), id=option_id))
        return options

    def compose(self) -> ComposeResult:
        with Vertical(id="group-box"):
            yield Static("Group by — enter narrows the list to a group", id="group-title")
            yield OptionList(*self._options(), id="group-options")

    def on_mount(self) -> None:
        self._highlight(self.current)
        self.query_one(OptionList).focus()

    def _highlight(self, key: GroupKey | None) -> None:
        if key is None:
            return
        option_list = self.query_one(OptionList)
        for option_id, each in self._keys.items():
            if each == key:
                option_list.highlighted = option_list.get_option_index(option_id)
                break

    def _highlighted_key(self) -> tuple[bool, GroupKey | None]:
        """Whether an option is highlighted, and its group (None for "All cases")."""
        option_list = self.query_one(OptionList)
        index = option_list.highlighted
        if index is None:
            return False, None
        option_id = option_list.get_option_at_index(index).id
        if option_id == CLEAR_GROUP or option_id not in self._keys:
            return True, None
        return True, self._keys[option_id]

    def watch_sections(self) -> None:
        """Redraw the list with the new figures, keeping the highlighted group."""
        if not self.is_mounted:
            return
        option_list = self.query_one(OptionList)
        any_highlighted, highlighted = self._highlighted_key()
        scroll = option_list.scroll_y
        option_list.clear_options()
        option_list.add_options(self._options())
        if highlighted is not None:
            self._highlight(highlighted)
        elif any_highlighted:
            option_list.highlighted = 0
        option_list.scroll_to(y=scroll, animate=False)

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

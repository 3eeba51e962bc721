"""The header line: what is verified against what, what is watched, what triggered the run."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from cer.tui.state.bars import HeaderState


class HeaderBar(Widget):
    """One line: ``cer · target version · impl · timeout 10 s · watching N paths · rerun:
    file changed``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "header-bar--title",
        "header-bar--muted",
        "header-bar--trigger",
    }

    DEFAULT_CSS = """
    HeaderBar {
        height: 1;
    }
    """

    state: reactive[HeaderState] = reactive(HeaderState())
    """What the bar shows; the app binds it to its own (a new value repaints the bar)."""

    def render(self) -> Text:
        state = self.state
        title = self.get_component_rich_style("header-bar--title", partial=True)
        muted = self.get_component_rich_style("header-bar--muted", partial=True)
        trigger = self.get_component_rich_style("header-bar--trigger", partial=True)
        text = Text(" ")
        text.append("cer", title)
        parts = [part for part in (state.target, state.implementation) if part]
        for part in parts:
            text.append(" · ", muted)
            text.append(part)
        if state.timeout is not None:
            text.append(" · ", muted)
            text.append(f"timeout {state.timeout:g} s", muted)
        if state.watch:
            text.append(" · ", muted)
            text.append(state.watch, muted)
        if state.trigger:
            text.append(" · ", muted)
            text.append(state.trigger, trigger)
        return text

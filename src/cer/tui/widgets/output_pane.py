"""The Output pane: captured stdout, stderr and traceback of the selected case."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style

from cer.tui.widgets.line_pane import LinePane


class OutputPane(LinePane):
    """A :class:`LinePane` whose component classes style the captured sections."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "output-pane--heading",
        "output-pane--stderr",
        "output-pane--traceback",
        "output-pane--label",
    }

    def section_style(self, name: str) -> Style:
        return self.get_component_rich_style(f"output-pane--{name}", partial=True)

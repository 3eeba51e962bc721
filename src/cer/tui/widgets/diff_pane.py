"""The Diff pane: expected against observed, its colours taken from the theme."""

from __future__ import annotations

from typing import ClassVar

from cer.tui.state.diffing import DiffStyles
from cer.tui.widgets.line_pane import LinePane


class DiffPane(LinePane):
    """A :class:`LinePane` whose component classes style the diff."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "diff-pane--header",
        "diff-pane--hunk",
        "diff-pane--gutter",
        "diff-pane--context",
        "diff-pane--removed",
        "diff-pane--added",
        "diff-pane--removed-strong",
        "diff-pane--added-strong",
        "diff-pane--whitespace",
        "diff-pane--note",
    }

    def diff_styles(self) -> DiffStyles:
        """The theme's diff styles, for a diff rendered elsewhere."""

        return DiffStyles(
            header=self.get_component_rich_style("diff-pane--header", partial=True),
            hunk=self.get_component_rich_style("diff-pane--hunk", partial=True),
            gutter=self.get_component_rich_style("diff-pane--gutter", partial=True),
            context=self.get_component_rich_style("diff-pane--context", partial=True),
            removed=self.get_component_rich_style("diff-pane--removed", partial=True),
            added=self.get_component_rich_style("diff-pane--added", partial=True),
            removed_strong=self.get_component_rich_style("diff-pane--removed-strong", partial=True),
            added_strong=self.get_component_rich_style("diff-pane--added-strong", partial=True),
            whitespace=self.get_component_rich_style("diff-pane--whitespace", partial=True),
            note=self.get_component_rich_style("diff-pane--note", partial=True),
        )

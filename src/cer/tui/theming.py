"""The themes on the Textual side: theme files made Textual themes, and the styles the
detail panes take from the widgets the current theme styles."""

from __future__ import annotations

from dataclasses import replace

from rich.style import Style
from textual.theme import BUILTIN_THEMES, Theme

from cer.model import Status
from cer.tui.state.styles import DetailStyles
from cer.tui.state.themes import ThemeFile
from cer.tui.widgets.case_list import CaseList
from cer.tui.widgets.diff_pane import DiffPane
from cer.tui.widgets.output_pane import OutputPane


def textual_theme(theme: ThemeFile) -> Theme:
    """``theme`` as a Textual theme: its base's colours for the stock widgets (footer,
    tabs, inputs), under its own name, with its ``cer-*`` colours as extra variables."""
    base = BUILTIN_THEMES[theme.base]
    return replace(base, name=theme.name, variables={**base.variables, **theme.variables})


def detail_styles(case_list: CaseList, diff_pane: DiffPane, output: OutputPane) -> DetailStyles:
    """The detail panes' styles, read from the widgets as the current theme styles them
    (the rendering runs in a worker thread, which must not touch the widgets)."""
    diff = diff_pane.diff_styles()

    def status(component: str) -> Style:
        return case_list.get_component_rich_style(component, partial=True)

    return DetailStyles(
        diff=diff,
        heading=output.section_style("heading"),
        label=output.section_style("label"),
        path=diff.header,
        stderr=output.section_style("stderr"),
        traceback=output.section_style("traceback"),
        statuses={
            Status.PASS: status("case-list--pass"),
            Status.FAIL: status("case-list--fail"),
            Status.ERRORED: status("case-list--errored"),
            Status.SKIPPED: status("case-list--skipped"),
            None: status("case-list--pending"),
        },
    )

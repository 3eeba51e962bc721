"""What the detail panes say about a case, rendered as Rich text off the event loop.

Pure Rich, no Textual: the app calls :func:`render_details` from a thread worker and
hands the finished text to the panes. The panes themselves are declared here, once, in
:data:`PANES`: the tabs, their order, ``tab``'s help and what each shows are all made
from it.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text

from cer.model import Case, CaseResult, SourceAccess, Status
from cer.text.safetext import for_terminal
from cer.text.tomltext import shown_input, table_lines
from cer.text.tracebacks import code_frame, implementation_site, trim
from cer.tui.state.board import Change, Row
from cer.tui.state.coverage_view import CoverageView, render_coverage
from cer.tui.state.diffing import render_result_diff
from cer.tui.state.formatting import FLAKY_MARK, SYMBOLS, format_ms
from cer.tui.state.styles import DetailStyles


@dataclass(frozen=True)
class Details:
    """The content of the detail panes for one case (a field per pane of
    :data:`PANES`, filled by :func:`render_details` and, for several implementations,
    :func:`~cer.tui.state.side_by_side.render_details_many`)."""

    reason: RenderableType
    diff: list[Text]
    output: list[Text]
    case: Text
    coverage: RenderableType


PaneWidget = Literal["text", "diff", "output"]
"""What shows a pane: wrapped Rich content that scrolls (``text``), or unwrapped lines
drawn as they come on screen, styled as a diff (``diff``) or as captured output
(``output``); a ``text`` pane's part is one renderable, the others' a list of lines."""


@dataclass(frozen=True)
class Pane:
    """One detail pane: its tab's id (``name``; its widget is ``#NAME-pane``) and
    label, the widget that shows it, and its part of the case's :class:`Details`."""

    name: str
    title: str
    widget: PaneWidget
    part: Callable[[Details], RenderableType | list[Text]]


PANES: tuple[Pane, ...] = (
    Pane("reason", "Reason", "text", lambda details: details.reason),
    Pane("diff", "Diff", "diff", lambda details: details.diff),
    Pane("output", "Output", "output", lambda details: details.output),
    Pane("case", "Case", "text", lambda details: details.case),
    Pane("coverage", "Coverage", "text", lambda details: details.coverage),
)
"""The detail panes in tab order."""


def render_details(
    row: Row | None,
    styles: DetailStyles,
    notes: tuple[str, ...] = (),
    *,
    flaky: bool = False,
    coverage: CoverageView | None = None,
    suite_name: str = "evals.toml",
    access: SourceAccess | None = None,
    known: str | None = None,
) -> Details:
    """Everything the panes show for ``row`` (None: no case is selected; the Coverage
    pane still shows the module's coverage)."""
    view = coverage if coverage is not None else CoverageView()
    if row is None:
        empty = Text("No case selected.")
        return Details(
            reason=empty,
            diff=[empty],
            output=[empty],
            case=empty,
            coverage=render_coverage(view, None, styles, suite_name),
        )
    result = row.result
    return Details(
        reason=render_reason(row, styles, notes, flaky=flaky, access=access, known=known),
        diff=(
            render_result_diff(result, styles.diff)
            if result is not None
            else [Text("Not run yet.", styles.diff.note)]
        ),
        output=render_output(result, styles),
        case=render_case(row.case, styles),
        coverage=render_coverage(view, row.case, styles, suite_name),
    )


def render_reason(
    row: Row,
    styles: DetailStyles,
    notes: tuple[str, ...] = (),
    *,
    flaky: bool = False,
    access: SourceAccess | None = None,
    known: str | None = None,
) -> Text:
    """The status, the reason and every mismatch with its path; a flaky case says so,
    because its status here may not be the implementation's fault alone, and a case
    the known-failures baseline lists says what the baseline makes of it (``known``)."""
    result = row.result
    status = row.status
    text = Text()
    status_style = styles.statuses.get(status, Style())
    word = "not run yet" if status is None else status.value
    text.append(f"{row.name}\n", styles.heading)
    text.append(f"{SYMBOLS[status]} {word}", status_style + styles.heading)
    if result is not None and result.elapsed_ms is not None:
        text.append(f"  in {format_ms(result.elapsed_ms)}", styles.label)
    if row.stale and status is not None:  # a case never run has no previous result
        text.append("  (from the previous run)", styles.label)
    change = row.change
    if change is Change.FIXED:
        text.append(f"  + fixed (was {row.baseline})", styles.label)
    elif change is Change.REGRESSED:
        text.append(f"  − regressed (was {row.baseline})", styles.label)
    text.append("\n")
    if known is not None:
        text.append(for_terminal(known), styles.label)
        text.append("\n")
    if flaky:
        text.append(f"{FLAKY_MARK} flaky", styles.heading)
        text.append(
            ": its status changed between recorded runs of this implementation on this "
            f"same suite (see cer history --case {shlex.quote(row.name)})\n",
            styles.label,
        )
    if result is None:
        return text
    messages = [mismatch.message for mismatch in result.mismatches]
    if result.reason and result.reason.strip() not in ("; ".join(messages), "\n".join(messages)):
        text.append("\n")
        text.append(result.reason)
        text.append("\n")
    if result.status in (Status.FAIL, Status.ERRORED):
        # The input beside the reason, as TOML on one line (cer.text.tomltext): the Case tab
        # shows it whole.
        shown = shown_input(row.case.input)
        text.append("\n")
        text.append("input = ", styles.label)
        text.append(shown.text)
        if shown.cut:
            text.append(
                f"  ({shown.total - len(shown.text) + 1} more characters: the Case pane "
                "has it whole)",
                styles.label,
            )
        text.append("\n")
    frame = code_frame(implementation_site(result), access)
    if frame is not None:
        lines = frame.render()
        text.append("\n")
        text.append(f"{lines[0]}\n", styles.heading)
        for line in lines[1:]:
            text.append(f"{line}\n", styles.traceback if line.startswith(">") else styles.label)
    if result.mismatches:
        text.append("\n")
        count = len(result.mismatches)
        text.append(f"{count} mismatch{'es' if count != 1 else ''}:\n", styles.heading)
        for mismatch in result.mismatches:
            path = mismatch.path or "(observation)"
            message = mismatch.message
            if message.startswith(f"{path}:"):
                message = message[len(path) + 1 :].lstrip()
            text.append("  • ")
            text.append(path, styles.path)
            text.append(": ")
            text.append(message)
            text.append("\n")
    if notes:
        text.append("\n")
        for note in notes:
            text.append(f"note: {note}\n", styles.label)
    return text


def render_output(result: CaseResult | None, styles: DetailStyles) -> list[Text]:
    """Captured stdout, stderr and traceback, as named sections."""
    if result is None:
        return [Text("Not run yet.", styles.label)]
    sections: list[tuple[str, str, Style]] = []
    if result.stdout:
        sections.append(("stdout", result.stdout, Style()))
    if result.stderr:
        sections.append(("stderr", result.stderr, styles.stderr))
    if result.traceback:
        sections.append(("traceback", trim(result.traceback), styles.traceback))
    if not sections:
        return [Text("Nothing was captured.", styles.label)]
    lines: list[Text] = []
    for number, (title, body, style) in enumerate(sections):
        if number:
            lines.append(Text(""))
        lines.append(Text(f"── {title} ──", styles.heading))
        lines.extend(Text(line.expandtabs(4), style) for line in body.splitlines())
    return lines


def render_case(case: Case, styles: DetailStyles) -> Text:
    """The case as declared: description, input, expect, verifies, tags, location."""
    text = Text()
    text.append(case.name, styles.heading)
    text.append(f"  {case.label}", styles.label)
    if case.line is not None:
        text.append(f"  line {case.line}", styles.label)
    text.append("\n")
    if case.description:
        text.append(f"\n{case.description}\n")
    facts = [("class", case.case_class), ("category", case.category)]
    if case.severity:
        facts.append(("severity", case.severity))
    if case.verifies:
        facts.append(("verifies", ", ".join(case.verifies)))
    if case.tags:
        facts.append(("tags", ", ".join(case.tags)))
    text.append("\n")
    for label, value in facts:
        text.append(f"{label:>9}: ", styles.label)
        text.append(f"{value}\n")
    for title, table in (("input", case.input), ("expect", case.expect)):
        text.append(f"\n[{title}]\n", styles.heading)
        text.append(_as_toml(table))
        text.append("\n")
    return text


def _as_toml(value: Mapping[str, Any]) -> str:
    """A declared table whole, as the TOML lines under its header (cer.text.tomltext)."""
    if not value:
        return "  (empty)"
    return "\n".join(f"  {line}" for line in table_lines(value))

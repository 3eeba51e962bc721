"""The summary bar: counts with symbols, changes since the last run, time, progress.

With several implementations it shows each one's totals instead, by label.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from cer.tui.state.bars import SummaryState
from cer.tui.state.formatting import FLAKY_MARK, format_ms

PROGRESS_WIDTH = 20
LANE_PROGRESS_WIDTH = 10


class SummaryBar(Widget):
    """One line: ✔ passed ✘ failed ‼ errored ○ skipped, ≈ flaky, +fixed −regressed, time,
    progress."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "summary-bar--pass",
        "summary-bar--fail",
        "summary-bar--errored",
        "summary-bar--skipped",
        "summary-bar--pending",
        "summary-bar--fixed",
        "summary-bar--regressed",
        "summary-bar--progress",
        "summary-bar--progress-rest",
        "summary-bar--muted",
        "summary-bar--flaky",
        "summary-bar--known",
        "summary-bar--stale-entry",
    }

    DEFAULT_CSS = """
    SummaryBar {
        height: 1;
    }
    SummaryBar > .summary-bar--flaky {
        color: $warning;
    }
    """

    state: reactive[SummaryState] = reactive(SummaryState())
    """What the bar shows; the app binds it to its own (a new value repaints the bar)."""

    _styles: dict[str, Style] | None = None
    """The components' styles, read once per theme (reading one costs more than
    drawing the bar, which a streaming run redraws every frame)."""

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None

    def render(self) -> Text:
        state = self.state
        counts = state.counts
        if self._styles is None:
            self._styles = {}
        styles = self._styles

        def style(name: str) -> Style:
            found = styles.get(name)
            if found is None:
                found = styles[name] = self.get_component_rich_style(
                    f"summary-bar--{name}", partial=True
                )
            return found

        if state.lanes:
            return self._render_lanes(state, style)
        text = Text(" ")
        text.append(f"✔ {counts.passed} passed", style("pass"))
        text.append("  ")
        text.append(f"✘ {counts.failed} failed", style("fail"))
        text.append("  ")
        text.append(f"‼ {counts.errored} errored", style("errored"))
        text.append("  ")
        text.append(f"○ {counts.skipped} skipped", style("skipped"))
        if counts.pending:
            text.append("  ")
            text.append(f"· {counts.pending} pending", style("pending"))
        _append_listed(text, counts.known, counts.stale, style, "  ")
        if state.flaky:
            text.append("  ")
            text.append(f"{FLAKY_MARK} {state.flaky} flaky", style("flaky"))
        if counts.fixed or counts.regressed:
            text.append("   ")
            text.append(f"+{counts.fixed} fixed", style("fixed"))
            text.append("  ")
            text.append(f"−{counts.regressed} regressed", style("regressed"))
        return _with_progress(text, state, style, PROGRESS_WIDTH, "")

    def _render_lanes(self, state: SummaryState, style: Callable[[str], Style]) -> Text:
        """``calc_ref ✔ 70  │  calc_sloppy ✔ 62 ✘ 8  │  ≠ 8 differ``, then progress or time.

        Zero counts other than passed are left out, so that four implementations fit on
        one line."""
        text = Text(" ")
        for number, lane in enumerate(state.lanes):
            if number:
                text.append("  │  ", style("muted"))
            counts = lane.counts
            text.append(f"{lane.label} ")
            text.append(f"✔ {counts.passed}", style("pass"))
            for count, mark, name in (
                (counts.failed, "✘", "fail"),
                (counts.errored, "‼", "errored"),
                (counts.skipped, "○", "skipped"),
                (counts.pending, "·", "pending"),
            ):
                if count:
                    text.append(f" {mark} {count}", style(name))
            _append_listed(text, counts.known, counts.stale, style, " ")
            if lane.flaky:
                text.append(f" {FLAKY_MARK} {lane.flaky}", style("flaky"))
            if counts.fixed:
                text.append(f" +{counts.fixed}", style("fixed"))
            if counts.regressed:
                text.append(f" −{counts.regressed}", style("regressed"))
        if state.disagreements is not None:
            text.append("  │  ", style("muted"))
            text.append(f"≠ {state.disagreements} differ", style("flaky"))
        return _with_progress(text, state, style, LANE_PROGRESS_WIDTH, f"{state.running_label} ")


def _append_listed(
    text: Text, known: int, stale: int, style: Callable[[str], Style], gap: str
) -> None:
    """``3 known`` (failures the baseline lists, counted in failed and errored too) and
    ``1 stale`` (listed cases that pass: entries to remove), when there are any."""
    if known:
        text.append(f"{gap}{known} known", style("known"))
    if stale:
        text.append(f"{gap}{stale} stale", style("stale-entry"))


def _append_partial(text: Text, state: SummaryState, style: Callable[[str], Style]) -> None:
    """``partial run: 5 of 33 ran (✔ 4 ✘ 1), 28 earlier``: a run of some cases says so,
    with its own counts apart from the earlier results the list still counts; after an
    edit of the suite alone, ``1 of 20000 ran (✘ 1), 19,999 unchanged, kept from the
    last run``: those results are current, not earlier ones."""
    partial = state.partial
    if partial is None:
        return
    text.append(": " if state.pattern else "   partial run: ", style("muted"))
    verb = "running" if state.running else "ran"
    text.append(f"{partial.ran} of {partial.rows} {verb}", style("muted"))
    counts = partial.counts
    marks = [
        (count, mark, name)
        for count, mark, name in (
            (counts.passed, "✔", "pass"),
            (counts.failed, "✘", "fail"),
            (counts.errored, "‼", "errored"),
            (counts.skipped, "○", "skipped"),
        )
        if count
    ]
    if marks:
        text.append(" (", style("muted"))
        for number, (count, mark, name) in enumerate(marks):
            text.append(f"{' ' if number else ''}{mark} {count}", style(name))
        text.append(")", style("muted"))
    if partial.kept:
        text.append(f", {partial.kept:,} unchanged, kept from the last run", style("muted"))
    if partial.earlier or not partial.kept:
        text.append(f", {partial.earlier} earlier", style("muted"))


def _with_progress(
    text: Text, state: SummaryState, style: Callable[[str], Style], width: int, label: str
) -> Text:
    """The bar's tail: a progress bar while running (else the run's time), then the
    filters in force."""
    if state.running:
        text.append("   ")
        total = max(state.total, 1)
        filled = round(width * min(state.done, total) / total)
        text.append("━" * filled, style("progress"))
        text.append("━" * (width - filled), style("progress-rest"))
        text.append(f" {label}{state.done}/{state.total}", style("muted"))
    elif state.elapsed_ms is not None:
        text.append(f"   in {format_ms(state.elapsed_ms)}", style("muted"))
    if state.filters:
        text.append(f"   showing {state.shown} of {state.rows} ({state.filters})", style("muted"))
    if state.pattern:
        text.append("   only ", style("muted"))
        text.append(repr(state.pattern), style("flaky"))
    _append_partial(text, state, style)
    if state.timeout is not None:
        text.append(f"   timeout {state.timeout:g} s", style("muted"))
    return text

"""How statuses, changes and times are written everywhere in the UI (pure, no Textual)."""

from __future__ import annotations

from collections.abc import Sequence

from cer.model import Status
from cer.tui.state.board import Change

SYMBOLS: dict[Status | None, str] = {
    Status.PASS: "✔",
    Status.FAIL: "✘",
    Status.ERRORED: "‼",
    Status.SKIPPED: "○",
    None: "·",
}
"""Status symbols, so that status never depends on colour alone."""

FLAKY_MARK = "≈"
"""Marks a case whose status changed between recorded runs of one implementation on one
suite (from the history), in the list and in the Reason pane."""

CHANGE_MARKS: dict[Change | None, str] = {Change.FIXED: "+", Change.REGRESSED: "−", None: " "}


def format_ms(elapsed_ms: int | None) -> str:
    """A case's time as the list shows it: ``12 ms``, ``1.4 s``, ``2m05s``."""
    if elapsed_ms is None:
        return ""
    if elapsed_ms < 1000:
        return f"{elapsed_ms} ms"
    if elapsed_ms < 60_000:
        return f"{elapsed_ms / 1000:.1f} s"
    minutes, seconds = divmod(elapsed_ms // 1000, 60)
    return f"{minutes}m{seconds:02d}s"


def column_labels(labels: Sequence[str]) -> tuple[str, ...]:
    """Labels as narrow column heads: a prefix every label shares up to a separator
    (``calc_`` of ``calc_ref`` and ``calc_sloppy``) is left out, so that four
    implementations fit beside a case's name; unchanged when that would leave one empty
    or the labels alike."""
    if len(labels) < 2:
        return tuple(labels)
    first, last = min(labels), max(labels)
    size = 0
    while size < min(len(first), len(last)) and first[size] == last[size]:
        size += 1
    common = first[:size]
    cut = max(common.rfind(mark) for mark in "_-.") + 1
    if cut <= 0:
        return tuple(labels)
    heads = tuple(label[cut:] for label in labels)
    if not all(heads) or len(set(heads)) != len(heads):
        return tuple(labels)
    return heads

"""Plain-text output of ``cer run``: a progress line while it runs, a report after.

Results go to stdout; progress goes to stderr and only when stderr is a terminal, so
piped or CI output holds the report alone. Statuses always carry a word or symbol,
never only a colour.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from typing import TextIO

from cer.events import CaseFinished, ImplementationFailed, RunEvent, RunStarted
from cer.model import CASE_CLASS_TO_ARRAY, RunResult, Status, Suite

SYMBOLS = {Status.PASS: "✔", Status.FAIL: "✘", Status.ERRORED: "‼", Status.SKIPPED: "○"}
LABELS = {Status.PASS: "PASS", Status.FAIL: "FAIL", Status.ERRORED: "ERROR", Status.SKIPPED: "SKIP"}
_COLOURS = {Status.PASS: "32", Status.FAIL: "31", Status.ERRORED: "35", Status.SKIPPED: "33"}


def use_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


class Progress:
    """A single self-rewriting line of counts on a terminal; silent elsewhere."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.counts: Counter[Status] = Counter()
        self.total = 0
        self.last_draw = 0.0
        self.started = time.monotonic()

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            self.total = event.total
            self.started = time.monotonic()
        elif isinstance(event, ImplementationFailed) and self.enabled:
            self.clear()
        elif isinstance(event, CaseFinished):
            self.counts[event.result.status] += 1
            now = time.monotonic()
            if self.enabled and (now - self.last_draw > 0.05 or event.done == event.total):
                self.last_draw = now
                self.draw(event.done)

    def draw(self, done: int) -> None:
        parts = " ".join(f"{SYMBOLS[s]}{self.counts[s]}" for s in Status if self.counts[s])
        elapsed = time.monotonic() - self.started
        self.stream.write(f"\r\x1b[2Krunning {done}/{self.total}  {parts}  {elapsed:.1f}s")
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


def render_report(
    run: RunResult, suite: Suite, *, colour: bool = False, verbose: bool = False
) -> str:
    """The human report: every failing and errored case with its reason, then totals."""

    def paint(status: Status, text: str) -> str:
        return f"\x1b[{_COLOURS[status]}m{text}\x1b[0m" if colour else text

    lines: list[str] = []
    for note in run.notes:
        lines.append(f"note: {note}")
    cases = {case.name: case for case in suite.cases}
    for result in run.results:
        if result.status in (Status.PASS, Status.SKIPPED) and not verbose:
            continue
        if result.status is Status.SKIPPED and result.reason == "deselected":
            continue
        case = cases.get(result.case_name)
        where = ""
        if case is not None:
            line = f":{case.line}" if case.line else ""
            where = f"  {suite.path.name}{line} [[{CASE_CLASS_TO_ARRAY[case.case_class]}]]"
        label = f"{SYMBOLS[result.status]} {LABELS[result.status]:<5}"
        lines.append(f"{paint(result.status, label)} {result.case_name}"
                     f"  ({result.category}){where}")
        if result.reason and result.status is not Status.PASS:
            lines.append(_indent(result.reason))
        if verbose and result.captured_output and result.status is not Status.PASS:
            lines.append(_indent(result.captured_output, "      | "))
    skipped = Counter(
        r.reason or "" for r in run.results if r.status is Status.SKIPPED
    )
    if skipped:
        details = ", ".join(f"{count} {reason}" for reason, count in sorted(skipped.items()))
        lines.append(f"{SYMBOLS[Status.SKIPPED]} skipped: {details}")
    summary = run.summary
    seconds = (run.completed_at_ms - run.started_at_ms) / 1000
    counts = ", ".join(
        paint(status, f"{count} {word}")
        for status, count, word in (
            (Status.PASS, summary.passed, "passed"),
            (Status.FAIL, summary.failed, "failed"),
            (Status.ERRORED, summary.errored, "errored"),
            (Status.SKIPPED, summary.skipped, "skipped"),
        )
    )
    target = run.target_module
    if suite.target_version:
        target += f" {suite.target_version}"
    lines.append(f"{target} · {run.implementation_id}")
    lines.append(f"{summary.total} cases: {counts} in {seconds:.2f}s — {summary.verdict}")
    return "\n".join(lines) + "\n"


def write(text: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(text)

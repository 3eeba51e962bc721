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
from collections.abc import Sequence
from datetime import datetime
from typing import TextIO

from cer.coverage import Coverage, describe_unknown
from cer.events import CaseFinished, ImplementationFailed, RunEvent, RunStarted
from cer.history import CaseChange, CaseEntry, RunDiff, RunRecord
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


def render_coverage(coverage: Coverage, suite_name: str, *, details: bool = False) -> list[str]:
    """The coverage line, every unknown ``verifies`` entry (always: a typo is an
    error), and with ``details`` the constraints that need a case or are not verified."""
    lines = [coverage.headline()]
    for reference in coverage.unknown:
        lines.append(f"  error: {describe_unknown(reference, suite_name)}")
    if not details:
        return lines
    for problem in coverage.problems:
        lines.append(f"  warning: {coverage.source.name}:{problem}")
    if coverage.needs_a_case:
        lines.append(f"  needs a case: {', '.join(coverage.needs_a_case)}")
    for item in coverage.constraints:
        if item.covered and item.verified is False:
            why = ", ".join(f"{name} {status}" for name, status in item.not_passed)
            lines.append(f"  not verified: {item.name} ({why})")
    verified = [item.name for item in coverage.constraints if item.verified]
    if verified:
        lines.append(f"  verified: {', '.join(verified)}")
    if not coverage.evaluated:
        covered = [item.name for item in coverage.constraints if item.covered]
        if covered:
            lines.append(f"  covered: {', '.join(covered)}")
    return lines


def render_report(
    run: RunResult,
    suite: Suite,
    *,
    colour: bool = False,
    verbose: bool = False,
    coverage: Coverage | None = None,
    coverage_details: bool = False,
    flaky: frozenset[str] | None = None,
) -> str:
    """The human report: every failing and errored case with its reason, then totals.

    ``coverage`` adds the constraint coverage line (details with ``coverage_details``);
    ``flaky`` marks the cases history knows to be flaky. The last line is always the
    totals and verdict.
    """
    flaky = flaky or frozenset()

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
        marker = "  [flaky]" if result.case_name in flaky else ""
        lines.append(f"{paint(result.status, label)} {result.case_name}"
                     f"  ({result.category}){where}{marker}")
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
    if coverage is not None:
        lines.extend(render_coverage(coverage, suite.path.name, details=coverage_details))
    elif coverage_details:
        lines.append(f"coverage: no commonsformat.md beside {suite.path.name}")
    shown = sorted(name for name in flaky if any(r.case_name == name for r in run.results))
    if shown:
        lines.append(f"flaky ({len(shown)}): {', '.join(shown)}")
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


def _local_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _table(rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> list[str]:
    """Rows as aligned columns; ``right`` holds the indexes of right-aligned ones."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        out.append("  ".join(cells).rstrip())
    return out


def render_history(records: Sequence[RunRecord], where: str) -> str:
    """``cer history``: recent runs, newest first, numbered as ``cer diff`` takes them."""
    if not records:
        return f"no runs recorded in {where}\n"
    rows = [["#", "run", "started", "implementation", "pass", "fail", "error", "skip",
             "verdict", "flaky"]]
    for index, record in enumerate(records, start=1):
        s = record.summary
        rows.append([
            str(index), record.short_id, _local_time(record.started_at_ms),
            record.implementation_id, str(s.passed), str(s.failed), str(s.errored),
            str(s.skipped), s.verdict,
            f"{len(record.flaky)}: {', '.join(record.flaky)}" if record.flaky else "",
        ])
    lines = _table(rows, right=frozenset({0, 4, 5, 6, 7}))
    lines.append(f"{len(records)} run{'s' if len(records) != 1 else ''} from {where}")
    return "\n".join(lines) + "\n"


def render_case_history(name: str, entries: Sequence[CaseEntry], where: str) -> str:
    """``cer history --case NAME``: one case's status in each run, newest first."""
    if not entries:
        return f"no recorded run has a case named {name!r} ({where})\n"
    rows = [["#", "run", "started", "implementation", "status", "flaky", "reason"]]
    for index, entry in enumerate(entries, start=1):
        status = Status(entry.status)
        rows.append([
            str(index), entry.run_id[:8], _local_time(entry.started_at_ms),
            entry.implementation_id, f"{SYMBOLS[status]} {LABELS[status]}",
            "flaky" if entry.flaky else "",
            " ".join((entry.reason or "").splitlines())[:120],
        ])
    lines = [f"{name}: {len(entries)} run{'s' if len(entries) != 1 else ''}"]
    lines.extend(_table(rows, right=frozenset({0})))
    flaky = [e for e in entries if e.flaky]
    if flaky:
        lines.append("flaky: its status changed between runs of the same implementation "
                     "on the same suite")
    return "\n".join(lines) + "\n"


def _change_line(symbol: str, change: CaseChange) -> str:
    before = change.before or "-"
    after = change.after or "-"
    text = f"  {symbol} {change.case_name}  {before} → {after}"
    if change.reason and change.after not in (None, Status.PASS.value):
        text += f"  ({' '.join(change.reason.splitlines())[:120]})"
    return text


def render_diff(diff: RunDiff, before: RunRecord, after: RunRecord) -> str:
    """``cer diff``: regressions, fixes, other changes, new and removed cases."""

    def describe(record: RunRecord) -> str:
        return (f"{record.short_id} ({record.implementation_id}, "
                f"{_local_time(record.started_at_ms)}, {record.summary.verdict})")

    lines = [f"from {describe(before)}", f"  to {describe(after)}"]
    if before.suite_hash and after.suite_hash and before.suite_hash != after.suite_hash:
        lines.append("note: the suite changed between these runs")
    sections = (
        ("regressions", SYMBOLS[Status.FAIL], diff.regressions),
        ("fixes", SYMBOLS[Status.PASS], diff.fixes),
        ("changed", "~", diff.changed),
        ("new", "+", diff.new),
        ("removed", "-", diff.removed),
    )
    for title, symbol, changes in sections:
        if changes:
            lines.append(f"{title} ({len(changes)}):")
            lines.extend(_change_line(symbol, change) for change in changes)
    counts = ", ".join(f"{len(changes)} {title}" for title, _, changes in sections)
    lines.append(f"{counts}, {diff.unchanged} unchanged")
    return "\n".join(lines) + "\n"


def write(text: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(text)

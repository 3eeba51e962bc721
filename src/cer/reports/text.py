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
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from cer.constraints import describe_unknown
from cer.engine.options import OTHER_SHARD, STOPPED
from cer.events import CaseFinished, ImplementationFailed, RunEvent, RunStarted
from cer.judge.verdict import REPORTED_NOTE
from cer.model import (
    CASE_CLASS_TO_ARRAY,
    MISSING,
    Case,
    ImplementationOrigin,
    RunResult,
    Status,
    Suite,
)
from cer.text.safetext import for_terminal
from cer.text.tomltext import input_line
from cer.text.tracebacks import SourceReader, failure_site, trim

if TYPE_CHECKING:
    # The matrix is imported by whoever built one, and the history's records by whoever
    # read them: a one-implementation run needs neither (nor what they import).
    from cer.constraints import Coverage, CoverageFigures
    from cer.history.records import ApprovalEvent, CaseChange, CaseEntry, RunDiff, RunRecord
    from cer.results.conformance import Conformance
    from cer.results.matrix import Group, GroupBy, Matrix, Row

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

    def __init__(self, stream: TextIO, enabled: bool, label: str = "") -> None:
        self.stream = stream
        self.enabled = enabled
        self.label = label
        """Names the implementation when several run one after another."""
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
        prefix = f"{self.label}: " if self.label else ""
        self.stream.write(f"\r\x1b[2K{prefix}running {done}/{self.total}  {parts}  {elapsed:.1f}s")
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


class SideBySideProgress:
    """One self-rewriting line of counts for several implementations running at once:
    ``label done/total symbols`` for each; silent elsewhere."""

    def __init__(self, stream: TextIO, enabled: bool, labels: Sequence[str]) -> None:
        self.stream = stream
        self.enabled = enabled
        self.lanes = [Progress(stream, False, label) for label in labels]
        self.done = [0] * len(labels)
        self.last_draw = 0.0
        self.started = time.monotonic()

    def __call__(self, index: int, event: RunEvent) -> None:
        self.lanes[index](event)
        if isinstance(event, CaseFinished):
            self.done[index] = event.done
            now = time.monotonic()
            if self.enabled and now - self.last_draw > 0.05:
                self.last_draw = now
                self.draw()

    def draw(self) -> None:
        parts = []
        for lane, done in zip(self.lanes, self.done, strict=True):
            counts = " ".join(f"{SYMBOLS[s]}{lane.counts[s]}" for s in Status if lane.counts[s])
            parts.append(f"{lane.label} {done}/{lane.total} {counts}".rstrip())
        elapsed = time.monotonic() - self.started
        self.stream.write(
            f"\r\x1b[2K{for_terminal(' · '.join(parts), multiline=False)}  {elapsed:.1f}s"
        )
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


def _is_load_failure(note: str) -> bool:
    if note.startswith("the Python implementation ") and " could not be loaded: " in note:
        return True
    return note.startswith(
        ("the command implementation ", "the harness could not start", "the per-case command")
    ) and (" could not be started: " in note or " could not start under the sandbox: " in note)


def _not_loaded_by(reason: str | None, note: str) -> bool:
    """Whether a case's reason is the load failure ``note``: ``not run:`` and the
    note's first line (a command's note goes on with the end of its stderr)."""
    if reason is None:
        return False
    first = note.split("; its stderr ends with:\n", 1)[0]
    return reason == f"not run: {first}"


def _code_frame_lines(traceback: str | None, reader: SourceReader) -> list[str]:
    """Where in the implementation's code it failed: the file, line and a few lines
    around it, read from the file the traceback names when it is one the implementation
    loaded, else why no code is shown (cer.text.tracebacks)."""
    frame = reader.frame(failure_site(traceback))
    return frame.render() if frame is not None else []


def render_report(
    run: RunResult,
    suite: Suite,
    *,
    colour: bool = False,
    verbose: bool = False,
    coverage: Coverage | None = None,
    coverage_details: bool = False,
    flaky: frozenset[str] | None = None,
    conformance: Conformance | None = None,
) -> str:
    """The human report: every failing and errored case with its reason, then totals.

    ``coverage`` adds the constraint coverage line (details with ``coverage_details``);
    ``flaky`` marks the cases history knows to be flaky; ``conformance`` (with a
    baseline) marks known failures and regressions and lists stale entries. The last
    line is always the totals and verdict.
    """
    flaky = flaky or frozenset()
    check = None if conformance is None else conformance.baseline
    known = {} if check is None else {k.case_name: k for k in check.known}
    regressed = {} if check is None else {r.case_name: r for r in check.regressions}

    def paint(status: Status, text: str) -> str:
        return f"\x1b[{_COLOURS[status]}m{text}\x1b[0m" if colour else text

    lines: list[str] = []
    reader = SourceReader(run.source_access)
    reader.preload(
        failure_site(r.traceback) for r in run.results if r.status in (Status.FAIL, Status.ERRORED)
    )
    for note in run.notes:
        lines.append(for_terminal(f"note: {note}"))
    load_note = next((note for note in run.notes if _is_load_failure(note)), None)
    not_loaded = [
        r for r in run.results if load_note is not None and _not_loaded_by(r.reason, load_note)
    ]
    if not_loaded:
        # One implementation that does not import: its traceback once, not once per case.
        first = not_loaded[0]
        lines.extend(_indent(line) for line in _code_frame_lines(first.traceback, reader))
        if first.traceback:
            trace = trim(first.traceback).rstrip("\n")
            head, _, last = trace.rpartition("\n")
            if head and last.strip() and load_note is not None and load_note.endswith(last.strip()):
                trace = head  # its last line is the error the note just said
            lines.append(_indent(for_terminal(trace), "      | "))
        count = len(not_loaded)
        lines.append(
            paint(Status.ERRORED, f"{SYMBOLS[Status.ERRORED]} {LABELS[Status.ERRORED]:<5}")
            + f" {count} case{'s' if count != 1 else ''} not run: the "
            + (
                "Python implementation could not be loaded"
                if load_note is not None and load_note.startswith("the Python implementation ")
                else "command implementation could not start"
            )
            + " (above)"
        )
    cases = {case.name: case for case in suite.cases}
    for result in run.results:
        if result.status in (Status.PASS, Status.SKIPPED) and not verbose:
            continue
        if not_loaded and load_note is not None and _not_loaded_by(result.reason, load_note):
            continue
        if result.status is Status.SKIPPED and result.reason == "deselected":
            continue
        case = cases.get(result.case_name)
        where = place = ""
        if case is not None:
            place = suite.path.name + (f":{case.line}" if case.line else "")
            where = f"  {place} [[{CASE_CLASS_TO_ARRAY[case.case_class]}]]"
        label = f"{SYMBOLS[result.status]} {LABELS[result.status]:<5}"
        marker = "  [flaky]" if result.case_name in flaky else ""
        if result.case_name in known:
            marker += f"  [known: {known[result.case_name].entry.reason}]"
        elif result.case_name in regressed:
            marker += f"  [regression: {regressed[result.case_name].why}]"
        heading = for_terminal(f"{result.case_name}  ({result.category}){where}", multiline=False)
        if result.case_name in known:
            painted = f"\x1b[2m{label}\x1b[0m" if colour else label
            lines.append(f"{painted} {heading}{for_terminal(marker, multiline=False)}")
            continue
        lines.append(
            f"{paint(result.status, label)} {heading}{for_terminal(marker, multiline=False)}"
        )
        # Everything an implementation said is shown, never obeyed: control sequences
        # and bidi controls appear as escapes (cer.text.safetext.for_terminal).
        if result.reason and result.status is not Status.PASS:
            lines.append(_indent(for_terminal(result.reason)))
        elif result.reason and REPORTED_NOTE in result.reason:
            # A pass on a measurement-like key is the implementation's word about itself.
            said = [line for line in result.reason.splitlines() if REPORTED_NOTE in line]
            lines.append(_indent(for_terminal("\n".join(said))))
        if case is not None and result.status in (Status.FAIL, Status.ERRORED):
            # The case's input beside its reason (cer.text.tomltext), cut with where it is whole.
            lines.append(_indent(input_line(case.input, place)))
        if result.status is not Status.PASS:
            lines.extend(_indent(line) for line in _code_frame_lines(result.traceback, reader))
        if verbose and result.captured_output and result.status is not Status.PASS:
            trimmed = replace(result, traceback=trim(result.traceback or "") or None)
            lines.append(_indent(for_terminal(trimmed.captured_output), "      | "))
    skipped = Counter(r.reason or "" for r in run.results if r.status is Status.SKIPPED)
    if skipped:
        details = ", ".join(f"{count} {reason}" for reason, count in sorted(skipped.items()))
        lines.append(for_terminal(f"{SYMBOLS[Status.SKIPPED]} skipped: {details}"))
        lines.extend(for_terminal(line) for line in _skipped_names(run, verbose))
    if coverage is not None:
        lines.extend(
            for_terminal(line)
            for line in render_coverage(coverage, suite.path.name, details=coverage_details)
        )
    elif coverage_details:
        lines.append(f"coverage: no commonsformat.md beside {suite.path.name}")
    for stale in () if check is None else check.stale:
        assert check is not None
        where = f"{check.path}:{stale.entry.line}" if stale.entry.line else check.path
        lines.append(
            for_terminal(
                f"stale: {stale.case_name} passes: remove it from the baseline ({where})",
                multiline=False,
            )
        )
    shown = sorted(name for name in flaky if any(r.case_name == name for r in run.results))
    if shown:
        lines.append(for_terminal(f"flaky ({len(shown)}): {', '.join(shown)}"))
    target = run.target_module
    if suite.target_version:
        target += f" {suite.target_version}"
    lines.append(for_terminal(f"{target} · {run.implementation_id}", multiline=False))
    lines.append(summary_line(run, colour=colour, conformance=conformance))
    return "\n".join(lines) + "\n"


SKIPPED_NAMED = 10
"""Skipped cases of one reason the text report names without ``-v``."""


def _skipped_names(run: RunResult, verbose: bool) -> list[str]:
    """``  category not supported: x: a, b, c``: the cases skipped for each reason
    other than being left out (deselected, another shard, a stopped run), by name, so
    that the report says which cases it could not verify and why."""
    from cer.results.conformance import DESELECTED

    by_reason: dict[str, list[str]] = {}
    for result in run.results:
        reason = result.reason or ""
        if result.status is not Status.SKIPPED or reason in (DESELECTED, OTHER_SHARD):
            continue
        if reason.startswith(STOPPED):
            continue
        by_reason.setdefault(reason, []).append(result.case_name)
    lines = []
    for reason, names in by_reason.items():
        shown = names if verbose else names[:SKIPPED_NAMED]
        more = len(names) - len(shown)
        tail = f" and {more} more (-v names them)" if more else ""
        lines.append(f"  {reason}: {', '.join(shown)}{tail}")
    return lines


def summary_line(
    run: RunResult, *, colour: bool = False, conformance: Conformance | None = None
) -> str:
    """The report's closing line: the counts, the time and the verdict (with its
    baseline and coverage qualifiers when ``conformance`` is given)."""

    def paint(status: Status, text: str) -> str:
        return f"\x1b[{_COLOURS[status]}m{text}\x1b[0m" if colour else text

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
    if conformance is None:
        from cer.results.conformance import conformance_of  # the one place a word is decided

        conformance = conformance_of(run)
    verdict = conformance.statement
    line = f"{summary.total} cases: {counts} in {seconds:.2f}s — {verdict}"
    if run.conditions is not None:
        line += f" · sandbox: {run.conditions.sandbox}"
        if run.conditions.network:
            line += f" · network: {run.conditions.network}"
        if not run.conditions.selection.is_everything:
            line += f" · selection: {run.conditions.selection.describe()}"
    return line


def _reason_line(reason: str, limit: int = 120) -> str:
    """A recorded reason on one line, cut after ``limit`` characters with ``…`` so that a
    cut reason never reads as a whole one."""
    line = " ".join(reason.splitlines())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _local_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _table(rows: Sequence[Sequence[str]], right: frozenset[int] = frozenset()) -> list[str]:
    """Rows as aligned columns; ``right`` holds the indexes of right-aligned ones.
    Every cell is shown as one line, its control characters escaped."""
    rows = [[for_terminal(cell, multiline=False) for cell in row] for row in rows]
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
    """``cer history``: recent runs, newest first, numbered as ``cer diff`` takes them.
    The verdict is the sentence the run stated (with its baseline and coverage), last
    since it is the longest cell, and ``· partial run`` after it for a run that left
    cases of the suite out."""
    if not records:
        return f"no runs recorded in {where}\n"
    rows = [
        [
            "#",
            "run",
            "started",
            "implementation",
            "pass",
            "fail",
            "error",
            "skip",
            "coverage",
            "flaky",
            "verdict",
        ]
    ]
    for index, record in enumerate(records, start=1):
        s = record.summary
        rows.append(
            [
                str(index),
                record.short_id,
                _local_time(record.started_at_ms),
                record.implementation_id,
                str(s.passed),
                str(s.failed),
                str(s.errored),
                str(s.skipped),
                _coverage_cell(record.coverage),
                f"{len(record.flaky)}: {', '.join(record.flaky)}" if record.flaky else "",
                # A run of some cases (n, s, --case) is not a verdict on the suite.
                f"{record.verdict} · partial run" if record.partial else record.verdict,
            ]
        )
    lines = _table(rows, right=frozenset({0, 4, 5, 6, 7}))
    lines.append(f"{len(records)} run{'s' if len(records) != 1 else ''} from {where}")
    return "\n".join(lines) + "\n"


def _coverage_cell(figures: CoverageFigures | None) -> str:
    """``6/7 covered, 5 verified, 1 needs repair`` in short: ``6/7 ✓5 ⚠1``."""
    if figures is None:
        return ""
    cell = figures.ratio()
    if figures.verified is not None:
        cell += f" ✓{figures.verified}"
    if figures.needs_repair:
        cell += f" ⚠{figures.needs_repair}"
    return cell


def render_approvals(events: Sequence[ApprovalEvent], where: str) -> str:
    """``cer history --approvals``: approval events, newest first."""
    if not events:
        return f"no approvals recorded in {where}\n"
    rows = [["#", "approved", "case", "constraint", "by", "expectation", "sha256"]]
    for index, event in enumerate(events, start=1):
        rows.append(
            [
                str(index),
                _local_time(event.approved_at_ms),
                event.case_name,
                ", ".join(event.constraints),
                event.approver,
                f"observed ({event.observed_from})" if event.from_observation else "as written",
                event.text_hash[:16],
            ]
        )
    lines = _table(rows, right=frozenset({0}))
    lines.append(f"{len(events)} approval{'s' if len(events) != 1 else ''} from {where}")
    return "\n".join(lines) + "\n"


def render_case_history(name: str, entries: Sequence[CaseEntry], where: str) -> str:
    """``cer history --case NAME``: one case's status in each run, newest first."""
    if not entries:
        return f"no recorded run has a case named {name!r} ({where})\n"
    rows = [["#", "run", "started", "implementation", "status", "flaky", "reason"]]
    for index, entry in enumerate(entries, start=1):
        status = Status(entry.status)
        rows.append(
            [
                str(index),
                entry.run_id[:8],
                _local_time(entry.started_at_ms),
                entry.implementation_id,
                f"{SYMBOLS[status]} {LABELS[status]}"
                + (f" ({entry.fail_class})" if entry.fail_class else ""),
                "flaky" if entry.flaky else "",
                _reason_line(entry.reason or ""),
            ]
        )
    lines = [f"{name}: {len(entries)} run{'s' if len(entries) != 1 else ''}"]
    lines.extend(_table(rows, right=frozenset({0})))
    flaky = [e for e in entries if e.flaky]
    if flaky:
        lines.append(
            "flaky: its status changed between runs of the same implementation on the same suite"
        )
    return "\n".join(lines) + "\n"


def _change_line(symbol: str, change: CaseChange) -> str:
    before = change.before or "-"
    after = change.after or "-"
    if change.before_class:
        before += f" ({change.before_class})"
    if change.after_class:
        after += f" ({change.after_class})"
    text = f"  {symbol} {change.case_name}  {before} → {after}"
    if change.reason and change.after not in (None, Status.PASS.value):
        text += f"  ({_reason_line(change.reason)})"
    return text


def render_diff(diff: RunDiff, before: RunRecord, after: RunRecord) -> str:
    """``cer diff``: regressions, fixes, other changes, new and removed cases."""

    def describe(record: RunRecord) -> str:
        partial = ", partial run: the cases it did not run are skipped in it"
        return (
            f"{record.short_id} ({record.implementation_id}, "
            f"{_local_time(record.started_at_ms)}, {record.verdict}"
            f"{partial if record.partial else ''})"
        )

    lines = [for_terminal(f"from {describe(before)}"), for_terminal(f"  to {describe(after)}")]
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
            lines.extend(for_terminal(_change_line(symbol, change)) for change in changes)
    counts = ", ".join(f"{len(changes)} {title}" for title, _, changes in sections)
    lines.append(f"{counts}, {diff.unchanged} unchanged")
    return "\n".join(lines) + "\n"


def write(text: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(text)


# ------------------------------------------------------------------------ the matrix

MATRIX_WIDTH = 120
"""The width the matrix is laid out for when it does not go to a terminal."""
_WORDED_LISTED = 8
"""How many *same verdict, different words* cases the text names without ``-v``."""
_MIN_NAME = 16


_STATE_SYMBOLS = {**{s.value: SYMBOLS[s] for s in Status}, "known": "◇"}
_STATE_WORDS = {**{s.value: LABELS[s] for s in Status}, "known": "KNOWN"}
_STATE_COLOURS = {**{s.value: _COLOURS[s] for s in Status}, "known": "36"}
_BAR = 20
"""Characters of a ranking's bar."""
_BAR_CHARS = {"pass": "█", "known": "▒", "fail": "▓", "errored": "▓", "skipped": "░"}


def _cell_text(state: str | None, words: bool) -> str:
    if state is None:
        return "–"
    return f"{_STATE_SYMBOLS[state]} {_STATE_WORDS[state]}" if words else _STATE_SYMBOLS[state]


def bar_widths(counts: Sequence[int], width: int) -> list[int]:
    """Widths of a bar's parts, proportional to ``counts`` and adding up to ``width``
    (when anything is counted); a part with any count gets at least one character, so
    a single failure never disappears from the bar."""
    total = sum(counts)
    if not total:
        return [0] * len(counts)
    floors = [max(1, count * width // total) if count else 0 for count in counts]
    while sum(floors) > width:
        widest = max(range(len(floors)), key=lambda i: floors[i])
        floors[widest] -= 1
    rests = sorted(
        range(len(counts)), key=lambda i: (counts[i] * width % total, counts[i]), reverse=True
    )
    for index in rests:
        if sum(floors) >= width:
            break
        if counts[index]:
            floors[index] += 1
    return floors


def _ranking_lines(matrix: Matrix, paint: Any) -> list[str]:
    """``  1. calc_ref  ████████████████████  100.0%  70 pass · 0 fail · …``."""
    standings = matrix.ranking
    label_w = max(len(s.label) for s in standings)
    lines = ["ranking (fewest unsuccessful cases first):"]
    order = ("pass", "known", "fail", "errored", "skipped")
    for standing in standings:
        widths = bar_widths([standing.count(state) for state in order], _BAR)  # type: ignore[arg-type]
        bar = "".join(
            paint(state, _BAR_CHARS[state] * width)
            for state, width in zip(order, widths, strict=True)
            if width
        )
        bar += " " * (_BAR - sum(widths))
        counts = (
            f"{standing.passed} pass · {standing.failed} fail · {standing.errored} error · "
            f"{standing.skipped} skip"
        )
        if standing.known:
            counts += f" · {standing.known} known"
        lines.append(
            for_terminal(
                f"  {standing.rank}. {standing.label.ljust(label_w)}  {bar}  "
                f"{standing.percent:5.1f}%  {counts}",
                multiline=False,
            )
        )
    return lines


def _marker(row: Row, words: bool) -> str:
    from cer.results.matrix import Agreement

    if row.agreement is Agreement.DISAGREE:
        return "≠ differ" if words else "≠"
    if row.agreement is Agreement.ALL_ERRORED:
        return "‼ all errored" if words else "‼"
    return ""


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _describe_value(value: Any) -> str:
    """``float 2.0``, ``int 2``, ``None``: the type matters when implementations differ."""
    if value is MISSING:
        return "<missing>"
    if value is None:
        return "None"
    from cer.judge.equality import format_value

    return f"{type(value).__name__} {format_value(value, 80)}"


def _group_line(
    group: Group, keys: Sequence[str], width: int, known: frozenset[str] = frozenset()
) -> str:
    if group.observation is None:
        reason = " ".join((group.reasons[0] or "").splitlines()[:1])
        what = f"nothing observed: {reason}" if reason else "nothing observed"
    elif keys:
        what = ", ".join(
            f"{key}: {_describe_value(group.observation.get(key, MISSING))}" for key in keys
        )
    else:
        from cer.results.matrix import IGNORED_KEYS

        what = f"the same observation (apart from {', '.join(sorted(IGNORED_KEYS))})"
    status = f"{SYMBOLS[group.status]} {LABELS[group.status]:<5}"
    names = ", ".join(f"{label} (known)" if label in known else label for label in group.labels)
    return _clip(for_terminal(f"      {names}  {status}  {what}"), width)


def standing_known(matrix: Matrix, index: int) -> int:
    """How many cases the column ``index`` failed as its baseline lists them."""
    return sum(1 for row in matrix.rows if row.states and row.states[index] == "known")


def _input_line(row: Row, width: int) -> str:
    """``      input: expression = "8 / 2 / 2"``: the case's input beside the verdicts."""
    from cer.text.tomltext import shown_input

    text = " ".join(shown_input(dict(row.input)).text.split())
    return _clip(for_terminal(f"      input: {text}", multiline=False), width)


def _where(suite: Suite, cases: Mapping[str, Case], name: str) -> str:
    case = cases.get(name)
    if case is None:
        return ""
    line = f":{case.line}" if case.line else ""
    return f"  {suite.path.name}{line} [[{CASE_CLASS_TO_ARRAY[case.case_class]}]]"


def _said(baselines: Sequence[str | None], index: int) -> str:
    phrase = baselines[index] if index < len(baselines) else None
    return f": {phrase}" if phrase else ""


def _origin_text(origin: ImplementationOrigin | None) -> str:
    """`` (tomli 2.0.1)``, `` (calc-python 0.1.0, as the harness declared itself)``."""
    if origin is None:
        return ""
    said = ", as the harness declared itself" if origin.source == "harness" else ""
    return f" ({origin.name} {origin.version}{said})"


def _verdict_counts(row: Row) -> str:
    counts = Counter(status for status in row.statuses if status is not None)
    parts = [
        f"{counts[s]} {word}"
        for s, word in (
            (Status.PASS, "pass"),
            (Status.FAIL, "fail"),
            (Status.ERRORED, "errored"),
            (Status.SKIPPED, "skipped"),
        )
        if counts[s]
    ]
    return ", ".join(parts)


def render_matrix(
    matrix: Matrix,
    suite: Suite,
    *,
    colour: bool = False,
    verbose: bool = False,
    width: int = MATRIX_WIDTH,
    coverages: Sequence[Coverage | None] = (),
    flaky: Sequence[frozenset[str] | None] = (),
    group_by: GroupBy | None = None,
    baselines: Sequence[str | None] = (),
    verdict_words: Sequence[str] = (),
) -> str:
    """The text report of several implementations: the matrix (its rows under each
    tag or array with ``group_by``), the totals, the ranking, the legend, the
    agreement section, and a last line of totals.

    Rows show cases that some implementation did not pass or that the implementations
    observed differently (every case with ``verbose``; cases deselected everywhere
    never). A cell is a status symbol and word (the word is dropped when the matrix
    would not fit in ``width``). ``coverages`` and ``flaky`` are per column, in column
    order, when known, and so are ``baselines``: what each run's baseline check says
    (``2 known failures, 6 regressions``), after its verdict.
    """
    from cer.results.matrix import Agreement

    def paint(state: str | None, text: str) -> str:
        if not colour or state is None:
            return text
        return f"\x1b[{_STATE_COLOURS[state]}m{text}\x1b[0m"

    labels = matrix.labels
    cases = {case.name: case for case in suite.cases}
    shown = [row for row in matrix.rows if row.rank < 2 or (verbose and row.rank == 2)]
    names = [row.case_name for row in shown]
    lines: list[str] = []
    for column in matrix.columns:
        for note in column.run.notes:
            lines.append(for_terminal(f"note: {column.label}: {note}"))

    def layout(words: bool) -> tuple[int, list[int], int]:
        cells = [max(len(label), 7 if words else 1) for label in labels]
        marker = max([len(_marker(row, words)) for row in shown] or [0])
        name = max([len(n) for n in names] + [len("case"), len("errored")])
        return name, cells, marker

    words = True
    name_w, cell_ws, marker_w = layout(words)
    fixed = sum(w + 2 for w in cell_ws) + (marker_w + 2 if marker_w else 0)
    if min(name_w, 48) + fixed > width:
        words = False
        name_w, cell_ws, marker_w = layout(words)
        fixed = sum(w + 2 for w in cell_ws) + (marker_w + 2 if marker_w else 0)
    name_w = max(_MIN_NAME, min(name_w, 48, width - fixed))

    def table_line(first: str, cells: Sequence[tuple[str | None, str]], last: str) -> str:
        parts = [_clip(for_terminal(first, multiline=False), name_w).ljust(name_w)]
        for (status, text), cell_w in zip(cells, cell_ws, strict=True):
            parts.append(paint(status, text) + " " * (cell_w - len(text)))
        parts.append(last)
        return "  ".join(parts).rstrip()

    lines.append(
        table_line("case", [(None, label) for label in labels], "agreement" if marker_w else "")
    )

    def row_line(row: Row) -> str:
        return table_line(
            row.case_name,
            [(state, _cell_text(state, words)) for state in row.states],
            _marker(row, words),
        )

    if group_by is None:
        lines.extend(row_line(row) for row in shown)
    else:
        on_show = {id(row) for row in shown}
        for name, rows in matrix.grouped(group_by):
            members = [row for row in rows if id(row) in on_show]
            if not members:
                continue
            title = f"[[{name}]]" if group_by == "array" else f"tag {name}"
            lines.append(for_terminal(f"{title} ({len(members)} of {len(rows)})", multiline=False))
            lines.extend(row_line(row) for row in members)
    hidden = sum(1 for row in matrix.rows if row.rank == 2) if not verbose else 0
    if hidden:
        lines.append(
            f"… {hidden} more case{'s' if hidden != 1 else ''} passed by every "
            "implementation, with no disagreement (-v lists them)"
        )
    deselected = sum(1 for row in matrix.rows if row.rank == 3)
    if deselected:
        lines.append(
            f"{SYMBOLS[Status.SKIPPED]} {deselected} case"
            f"{'s' if deselected != 1 else ''} deselected"
        )
    summaries = [column.summary for column in matrix.columns]
    for word, status in (
        ("passed", Status.PASS),
        ("failed", Status.FAIL),
        ("errored", Status.ERRORED),
        ("skipped", Status.SKIPPED),
    ):
        counts = [getattr(summary, word) for summary in summaries]
        lines.append(
            table_line(
                word, [(status.value if count else None, str(count)) for count in counts], ""
            )
        )
    known = [standing_known(matrix, index) for index in range(len(matrix.columns))]
    if any(known):
        lines.append(
            table_line("known", [("known" if n else None, str(n)) for n in known], "").rstrip()
        )
    lines.append("")
    lines.extend(_ranking_lines(matrix, paint))
    lines.append("")
    lines.append("implementations:")
    label_w = max(len(label) for label in labels)
    for index, column in enumerate(matrix.columns):
        word = _word(verdict_words, index, column.summary.verdict)
        text = for_terminal(
            f"  {column.label.ljust(label_w)}  {column.implementation_id}"
            f"{_origin_text(column.run.origin)} — {word}"
            f"{_said(baselines, index)}",
            multiline=False,
        )
        coverage = coverages[index] if index < len(coverages) else None
        if coverage is not None and coverage.evaluated:
            text += f", {coverage.verified} of {coverage.total} constraints verified"
        lines.append(text)
        known_reasons = Counter(
            column.known[row.case_name].reason
            for row in matrix.declared
            if row.states and row.states[index] == "known" and row.case_name in column.known
        )
        if known_reasons:
            said = "; ".join(
                f"{reason} ({count})" if count > 1 else reason
                for reason, count in known_reasons.most_common()
            )
            lines.append(
                _clip(
                    for_terminal(
                        f"  {' ' * label_w}  known ({sum(known_reasons.values())}): {said}",
                        multiline=False,
                    ),
                    max(width, 60),
                )
            )
        names_flaky = flaky[index] if index < len(flaky) else None
        ran = {r.case_name for r in column.run.results} if names_flaky else set()
        marked = sorted(n for n in names_flaky or () if n in ran)
        if marked:
            lines.append(
                for_terminal(f"  {' ' * label_w}  flaky ({len(marked)}): {', '.join(marked)}")
            )
    first = next((c for c in coverages if c is not None), None)
    if first is not None:
        for reference in first.unknown:
            lines.append(f"error: {describe_unknown(reference, suite.path.name)}")
    lines.append("")
    disagreements = matrix.disagreements
    compared = sum(
        1 for row in matrix.rows if row.agreement in (Agreement.AGREE, Agreement.DISAGREE)
    )
    from cer.results.matrix import AGREE_ON_ALL, describe_agree_on

    on = describe_agree_on(matrix.agree_on)
    if disagreements:
        lines.append(
            f"agreement: {len(disagreements)} of {compared} cases compared were "
            f"observed differently, on {on}"
        )
    else:
        lines.append(
            f"agreement: every implementation observed the same in all {compared} cases "
            f"compared, on {on}"
        )
    worded = matrix.words_differ
    if worded:
        plural = "s" if len(worded) != 1 else ""
        names = [row.case_name for row in worded]
        listed = names if verbose or len(names) <= _WORDED_LISTED else names[:_WORDED_LISTED]
        more = f", … {len(names) - len(listed)} more (-v lists them)" if listed != names else ""
        hint = "" if matrix.agree_on == AGREE_ON_ALL else " (--agree-on all compares them)"
        lines.append(
            for_terminal(
                f"same verdict, different words: {len(names)} case{plural}{hint}: "
                f"{', '.join(listed)}{more}",
                multiline=False,
            )
        )
    for label in matrix.unobserved:
        lines.append(
            f"{label} observed nothing (every case it ran errored); it is left "
            "out of the comparison"
        )
    for row in disagreements:
        extra = []
        if row.expect_empty:
            extra.append("the suite expects nothing here")
        elif not any(group.status is Status.PASS for group in row.groups):
            extra.append("no implementation passes")
        tail = f"  ({'; '.join(extra)})" if extra else ""
        where = _where(suite, cases, row.case_name)
        lines.append(
            for_terminal(
                f"≠ {row.case_name}  ({row.category}){where}  {_verdict_counts(row)}{tail}",
                multiline=False,
            )
        )
        lines.append(_input_line(row, max(width, 60)))
        known_here = frozenset(
            label for label, state in zip(labels, row.states, strict=True) if state == "known"
        )
        keys = row.differing_keys
        for group in row.groups:
            lines.append(_group_line(group, keys, max(width, 60), known_here))
    errored = matrix.all_errored
    if errored:
        lines.append(
            f"all errored ({len(errored)}): every implementation errored, so "
            "there is nothing to compare"
        )
        for row in errored:
            reasons = []
            for group in row.groups:
                for label, reason in zip(group.labels, group.reasons, strict=True):
                    reasons.append(f"{label}: {' '.join((reason or '').splitlines()[:1])}")
            lines.append(
                _clip(
                    for_terminal(
                        f"  {SYMBOLS[Status.ERRORED]} {row.case_name}  {'; '.join(reasons)}",
                        multiline=False,
                    ),
                    max(width, 60),
                )
            )
    target = matrix.columns[0].run.target_module
    if suite.target_version:
        target += f" {suite.target_version}"
    lines.append(f"{target} · {len(labels)} implementations")
    lines.append(matrix_summary_line(matrix, suite, verdict_words))
    return "\n".join(lines) + "\n"


def _word(words: Sequence[str], index: int, counted: str) -> str:
    """The verdict word of column ``index`` as decided with its coverage and scope
    (:func:`cer.results.conformance.conformance_of`), else the one its counts give."""
    return words[index] if index < len(words) else counted


def matrix_summary_line(matrix: Matrix, suite: Suite, words: Sequence[str] = ()) -> str:
    """The matrix report's closing line: verdicts per implementation and disagreements
    (``words``: each column's decided verdict word, in column order)."""
    verdicts = Counter(
        _word(words, index, column.summary.verdict) for index, column in enumerate(matrix.columns)
    )
    order = ("conformant", "passed", "nonconformant", "incomplete")
    verdict_text = ", ".join(f"{verdicts[v]} {v}" for v in order if verdicts[v])
    count = len(matrix.disagreements)
    worded = len(matrix.words_differ)
    tail = f", {worded} worded differently" if worded else ""
    return (
        f"{len(matrix.columns)} implementations × {len(suite.cases)} cases: "
        f"{verdict_text} · {count} disagreement{'s' if count != 1 else ''}{tail}"
    )

"""The Markdown report: what a CI job summary (``$GITHUB_STEP_SUMMARY``) or a pull
request comment holds about one run, written to read well both raw and rendered.

The verdict sentence and the counts first, then the regressions (a failure the
baseline does not list), the other failures with their place in the suite, their
input and expect tables (as TOML, as the suite has them), what the implementation
returned and what cer observed itself, the passes that rest on what the
implementation reported about itself, the stale baseline entries, the known failures,
every skipped case with why, and the coverage.

Everything from the implementation's side (reasons, observed values, captured output)
and everything from the suite is untrusted text on a web page. It is shown through
two helpers only, which escape only what must be: :func:`inline` puts one line in a
code span whose backtick fence is longer than any run of backticks in it (inside a
code span Markdown parses nothing: no HTML, link, image, emphasis, ``@mention`` or
``#reference``), with a table pipe escaped in a table cell; :func:`block` puts a
multi-line value in a fenced code block whose fence is longer than any run of
backticks in it, so no line of it can close the block. Control and bidi characters
become visible escapes first (:func:`cer.text.safetext.for_terminal`), and every value is
cut to a bounded length, saying so.

The whole report stays within :data:`SIZE_LIMIT` bytes (GitHub takes at most 1 MiB of
job summary a step): the parts that would pass it are left out, and the report ends
saying so and where every case is (the JSON results, the HTML report).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from typing import Any

from cer.judge.compare import RUNNER_OBSERVED_KEYS, shown_measurement, shown_mismatch_observed
from cer.judge.verdict import REPORTED_NOTE
from cer.model import CASE_CLASS_TO_ARRAY, MISSING, Case, CaseResult, Status
from cer.reports.context import ReportContext, suite_display_path
from cer.text import tomltext
from cer.text.safetext import for_terminal

__all__ = ["SIZE_LIMIT", "Page", "block", "html_inline", "inline", "render"]

CELL_CHARS = 300
"""At most this many characters of one value in a table cell or line."""
BLOCK_CHARS = 4000
"""At most this many characters of one multi-line value."""
DETAILED = 30
"""Failures shown with their values; the rest are listed in a table."""
NOT_RUN = "not run: "
"""How the reason of a case that never ran begins (its cause follows)."""
SIZE_LIMIT = 1_000_000
"""Bytes of Markdown a report holds at most, its closing note included: under
GitHub's 1 MiB (1,048,576 bytes) limit on a step's job summary."""
WHERE_THE_REST_IS = (
    "every case, with its reason and evidence, is in the JSON results "
    "(`cer run --report json=PATH`) and the HTML report (`--report html=PATH`)"
)
"""Where a report cut for size sends its reader (the Action writes both)."""

_BACKTICKS = re.compile(r"`+")


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text) - limit} more characters]"


def _fence_for(text: str, least: int) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(least, longest + 1)


def inline(text: str, limit: int = CELL_CHARS, *, cell: bool = False) -> str:
    """``text`` as inert inline Markdown: one line in a code span (``cell``: inside a
    table, its pipes escaped as GitHub's tables require, even in a code span). Empty
    text is an empty string."""
    if not text:
        return ""
    shown = for_terminal(_cut(text, limit), multiline=False)
    if cell:
        shown = shown.replace("|", "\\|")
    fence = _fence_for(shown, 1)
    # A code span strips one space each side when both are there: a space each side
    # keeps a backtick at either end of the text from joining the fence, and keeps
    # text that begins and ends with a space as it is.
    pad = shown[0] == "`" or shown[-1] == "`" or (shown[0] == shown[-1] == " " and shown.strip())
    space = " " if pad else ""
    return f"{fence}{space}{shown}{space}{fence}"


def html_inline(text: str, limit: int = CELL_CHARS) -> str:
    """``text`` as inert inline HTML, for a line inside an HTML block (a ``<summary>``),
    where Markdown is not parsed: one line in ``<code>`` (in which GitHub links no
    ``@mention`` or ``#reference``), with ``&``, ``<``, ``>`` and quotes escaped."""
    if not text:
        return ""
    return f"<code>{html.escape(for_terminal(_cut(text, limit), multiline=False))}</code>"


_PLAIN = re.compile(r"[A-Za-z0-9 ,:;/.()'-]+")


def _statement(text: str) -> str:
    """The verdict sentence in bold: cer's own words, shown plain when they hold
    nothing Markdown could act on, else as a code span."""
    return f"**{text}**" if _PLAIN.fullmatch(text) else f"**{inline(text, 1000)}**"


def block(text: str, limit: int = BLOCK_CHARS, info: str = "") -> str:
    """``text`` as a fenced code block (``info``: the report's own language name, such
    as ``toml``), its fence longer than any run of backticks in it."""
    shown = for_terminal(_cut(text, limit))
    fence = _fence_for(shown, 3)
    return f"{fence}{info}\n{shown}\n{fence}"


class Page:
    """The report's lines, added a part at a time within :data:`SIZE_LIMIT` bytes: a
    part that would pass it, and every part after it, is left out (counted), so a
    table is cut between rows and a failure's details are whole or absent."""

    def __init__(self, limit: int = SIZE_LIMIT, where: str = WHERE_THE_REST_IS) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.limit = limit
        self.where = where
        """Where the reader finds what a cut page leaves out."""
        self.left_out = 0
        self._closing = len(self._note(10**9).encode("utf-8")) + 8

    def add(self, *lines: str) -> bool:
        """Add ``lines`` as one part; False (and nothing added) when it does not fit."""
        size = sum(len(line.encode("utf-8", "backslashreplace")) + 1 for line in lines)
        if self.left_out or self.size + size > self.limit - self._closing:
            self.left_out += 1
            return False
        self.lines.extend(lines)
        self.size += size
        return True

    def table(self, header: Iterable[str], rows: Iterable[Iterable[str]]) -> None:
        heads = list(header)
        self.add("| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads))
        for row in rows:
            if not self.add("| " + " | ".join(row) + " |"):
                break
        self.add("")

    def _note(self, left_out: int) -> str:
        return (
            f"**This report stops here** ({left_out} more parts left out) to stay within "
            f"GitHub's 1 MiB job-summary limit: {self.where}."
        )

    def text(self) -> str:
        lines = list(self.lines)
        if self.left_out:
            lines += ["", self._note(self.left_out)]
        return "\n".join(lines).rstrip("\n") + "\n"


def _status_word(status: Status) -> str:
    return {Status.FAIL: "fail", Status.ERRORED: "errored"}.get(status, status.value)


def _where(context: ReportContext, case: Case | None) -> str:
    where = suite_display_path(context.suite)
    if case is not None and case.line:
        where += f":{case.line}"
    if case is not None:
        where += f" [[{CASE_CLASS_TO_ARRAY.get(case.case_class, case.case_class)}]]"
    return where


def _toml(table: Mapping[str, Any]) -> str:
    return "\n".join(tomltext.table_lines(table)) or "(empty table)"


def _failure(context: ReportContext, result: CaseResult, case: Case | None, note: str) -> list[str]:
    """One failure: where the case is, why, what it gave, expected, returned and
    what cer observed itself."""
    title = f"{html_inline(result.case_name)} {_status_word(result.status)}"
    if note:
        title += f" ({note})"
    lines = [
        "<details open>" if not note.startswith("known") else "<details>",
        f"<summary>{title}</summary>",
        "",
        f"at {inline(_where(context, case))}",
        "",
        "reason:",
        "",
        block(result.reason or ""),
    ]
    if case is not None:
        lines += ["", "input:", "", block(_toml(case.input), info="toml")]
        lines += ["", "expect:", "", block(_toml(case.expect), info="toml")]
    if result.observation is not None:
        returned, observed = _observed(result.observation, {} if case is None else case.expect)
        if returned:
            lines += ["", "returned:", "", block(returned, info="toml")]
        if observed:
            lines += ["", "observed by cer:", "", block(observed, info="toml")]
    if result.mismatches:
        lines += ["", "| where | expected | observed |", "| --- | --- | --- |"]
        for mismatch in result.mismatches[:20]:
            # A missed bound on a measurement reads as people read it (1129 ms), told
            # apart from its bound; every other value is shown exactly.
            people = shown_mismatch_observed(mismatch)
            seen = people if people is not None else _value(mismatch.observed)
            lines.append(
                f"| {inline(mismatch.path or '(value)', cell=True)} "
                f"| {inline(_value(mismatch.expected), cell=True)} | {inline(seen, cell=True)} |"
            )
    lines += ["", "</details>", ""]
    return lines


def _value(value: Any) -> str:
    return "(missing)" if value is MISSING else tomltext.inline(value)


def _observed(observation: Mapping[str, Any], expect: Mapping[str, Any]) -> tuple[str, str]:
    """What the implementation returned, and what cer observed itself (the keys the
    runner fills in: whether it raised, crashed or hung, and what it measured), each as
    ``key = value`` lines; a measurement held only to bounds is shown as people read
    it, told apart from its bounds (:func:`cer.judge.compare.shown_measurement`)."""
    returned: list[str] = []
    observed: list[str] = []
    for key, value in observation.items():
        if key in RUNNER_OBSERVED_KEYS and not _tells(str(key), value, expect):
            continue
        shown = shown_measurement(str(key), value, expect)
        line = tomltext.table_lines({key: value})[0] if shown is None else f"{key} = {shown}"
        (observed if key in RUNNER_OBSERVED_KEYS else returned).append(line)
    return "\n".join(returned), "\n".join(observed)


def _tells(key: str, value: Any, expect: Mapping[str, Any]) -> bool:
    """Whether a key the runner fills in says anything of this case: it raised,
    crashed, hung or was rejected, or the case's expect table names the key (or a bound
    on it). ``crashed = false`` on every case would only hide what matters."""
    named = any(name == key or name.startswith(f"{key}_") for name in expect)
    return named or (value is not None and value is not False and key != "elapsed_ms")


def _reported_passes(page: Page, results: Iterable[CaseResult], declared: dict[str, Case]) -> None:
    """The passes whose expectation compares a key that only looks like a measurement:
    the runner measured nothing of it, so the pass is the implementation's word about
    itself, and the report says so beside what was expected."""
    passes = [r for r in results if r.status is Status.PASS and REPORTED_NOTE in (r.reason or "")]
    if not passes:
        return
    page.add(f"#### Passes on what the implementation reported ({len(passes)})", "")
    rows = []
    for result in passes:
        case = declared.get(result.case_name)
        expected = "" if case is None else tomltext.inline(dict(case.expect))
        rows.append(
            [
                inline(result.case_name, cell=True),
                inline(result.reason or "", cell=True),
                inline(expected, cell=True),
            ]
        )
    page.table(["case", "note", "expected"], rows)


def _skipped(page: Page, results: Iterable[CaseResult]) -> None:
    """Every skipped case, by name, under why it was skipped."""
    why: dict[str, list[str]] = {}
    for result in results:
        if result.status is Status.SKIPPED:
            why.setdefault(result.reason or "(no reason given)", []).append(result.case_name)
    if not why:
        return
    count = sum(len(names) for names in why.values())
    page.add(f"#### Skipped ({count})", "")
    for reason, names in why.items():
        plural = "s" if len(names) != 1 else ""
        page.add(f"{inline(reason)}, {len(names)} case{plural}:", "")
        listed = ", ".join(inline(name, 100) for name in names)
        if not page.add(listed, ""):
            break


def render(context: ReportContext) -> str:
    """The report as GitHub-flavoured Markdown, within :data:`SIZE_LIMIT` bytes."""
    page = Page()
    run, suite = context.run, context.suite
    verdict = context.verdict()
    check = verdict.baseline
    summary = run.summary
    declared = {case.name: case for case in suite.cases}
    target = run.target_module + (f" {suite.target_version}" if suite.target_version else "")
    seconds = (run.completed_at_ms - run.started_at_ms) / 1000
    page.add(
        f"### cer: {inline(target)} · {inline(run.implementation_id)}",
        "",
        _statement(verdict.statement),
        "",
    )
    page.table(
        ["cases", "passed", "failed", "errored", "skipped", "time"],
        [
            [
                str(summary.total),
                str(summary.passed),
                str(summary.failed),
                str(summary.errored),
                str(summary.skipped),
                f"{seconds:.2f} s",
            ]
        ],
    )
    for note in run.notes:
        page.add(f"note: {inline(note)}", "")
    bad = [r for r in run.results if r.status in (Status.FAIL, Status.ERRORED)]
    known = {} if check is None else {k.case_name: k for k in check.known}
    regressed = {} if check is None else {r.case_name: r for r in check.regressions}
    if check is not None:
        page.add(f"#### Regressions ({len(check.regressions)})", "")
        if check.regressions:
            page.table(
                ["case", "status", "why"],
                (
                    [inline(r.case_name, cell=True), r.status, inline(r.why, cell=True)]
                    for r in check.regressions
                ),
            )
        else:
            page.add("None: every failure is listed in the baseline.", "")
    ordered = [r for r in bad if r.case_name in regressed]
    ordered += [r for r in bad if r.case_name not in regressed and r.case_name not in known]
    ordered += [r for r in bad if r.case_name in known]
    if ordered:
        page.add(f"#### Failures ({len(ordered)})", "")
    # Cases not run for one cause (an implementation that could not be loaded or
    # started): the first is shown whole, the others by name, so the cause is said once.
    causes: dict[str, list[str]] = {}
    for result in ordered:
        if (result.reason or "").startswith(NOT_RUN):
            causes.setdefault(result.reason or "", []).append(result.case_name)
    firsts = {names[0] for names in causes.values()}
    ordered = [
        r for r in ordered if r.case_name in firsts or not (r.reason or "").startswith(NOT_RUN)
    ]
    for alike in causes.values():
        if len(alike) > 1:
            others = ", ".join(inline(name, 100) for name in alike[1:])
            page.add(
                f"{len(alike)} cases not run for one cause, shown with the first "
                f"({inline(alike[0], 100)}) below; the others: {others}",
                "",
            )
    for result in ordered[:DETAILED]:
        note = ""
        if result.case_name in regressed:
            note = "regression"
        elif result.case_name in known:
            note = "known failure"
        page.add(*_failure(context, result, declared.get(result.case_name), note))
    rest = ordered[DETAILED:]
    if rest:
        page.add(f"{len(rest)} more, without their values:", "")
        page.table(
            ["case", "status", "at", "reason"],
            (
                [
                    inline(r.case_name, 100, cell=True),
                    _status_word(r.status),
                    inline(_where(context, declared.get(r.case_name)), cell=True),
                    inline(r.reason or "", cell=True),
                ]
                for r in rest
            ),
        )
    _reported_passes(page, run.results, declared)
    if check is not None and check.stale:
        page.add(f"#### Stale baseline entries ({len(check.stale)})", "")
        page.add("These cases pass: remove their entries from the baseline.", "")
        page.table(
            ["case", "entry", "line"],
            (
                [
                    inline(s.case_name, cell=True),
                    inline(s.entry.case, cell=True),
                    str(s.entry.line or ""),
                ]
                for s in check.stale
            ),
        )
    if check is not None and check.known:
        page.add(f"#### Known failures ({len(check.known)})", "")
        page.table(
            ["case", "status", "reason", "link"],
            (
                [
                    inline(k.case_name, cell=True),
                    k.status,
                    inline(k.entry.reason, cell=True),
                    inline(k.entry.link or "", cell=True),
                ]
                for k in check.known
            ),
        )
    _skipped(page, run.results)
    coverage = context.coverage
    if coverage is not None:
        page.add("#### Coverage", "", inline(coverage.headline(), 1000), "")
        if coverage.needs_a_case:
            page.add(f"needs a case: {', '.join(inline(n) for n in coverage.needs_a_case)}", "")
        for reference in coverage.unknown:
            page.add(f"unknown constraint: {inline(reference.message)}", "")
        for problem in coverage.problems:
            page.add(f"problem in commonsformat.md: {inline(problem)}", "")
    return page.text()

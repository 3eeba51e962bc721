"""The Markdown report: what a CI job summary (``$GITHUB_STEP_SUMMARY``) or a pull
request comment holds about one run.

The verdict sentence and the counts first, then the regressions (a failure the
baseline does not list), the other failures with their input, expected and observed
values, the passes that rest on what the implementation reported about itself (a key
that only looks like a measurement, such as ``latency_max``), the stale baseline
entries, the known failures and the coverage.

Everything from the implementation's side (reasons, observed values, captured output)
and everything from the suite is untrusted text on a web page. It is shown through
two helpers only: :func:`inline` for a table cell or a line of text, which escapes
HTML and turns every ASCII punctuation character into a numeric character reference
(so no Markdown syntax, table pipe, link, image, heading or code fence can start in
it) inside ``<code>`` (where GitHub links no ``@mention`` or ``#reference``); and
:func:`block` for a multi-line value, an HTML ``<pre>`` block, which Markdown leaves
unparsed, with ``&``, ``<`` and ``>`` escaped. Control and bidi characters become
visible escapes first (:func:`cer.safetext.for_terminal`), and every value is cut to
a bounded length, saying so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cer.judge.compare import shown_measurement, shown_mismatch_observed
from cer.judge.verdict import REPORTED_NOTE
from cer.model import CASE_CLASS_TO_ARRAY, Case, CaseResult, Status
from cer.reports.context import ReportContext, suite_display_path
from cer.results import serialize
from cer.safetext import for_terminal

__all__ = ["block", "inline", "render"]

CELL_CHARS = 300
"""At most this many characters of one value in a table cell or line."""
BLOCK_CHARS = 4000
"""At most this many characters of one multi-line value."""
DETAILED = 30
"""Failures shown with their values; the rest are listed by name."""
NOT_RUN = "not run: "
"""How the reason of a case that never ran begins (its cause follows)."""

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text) - limit} more characters]"


def inline(text: str, limit: int = CELL_CHARS) -> str:
    """``text`` as inert inline Markdown: one line, in ``<code>``, every punctuation
    character a numeric reference. Empty text is an empty string."""
    if not text:
        return ""
    shown = for_terminal(_cut(text, limit), multiline=False)
    escaped = "".join(f"&#{ord(c)};" if c in _PUNCTUATION else c for c in shown)
    return f"<code>{escaped}</code>"


def block(text: str, limit: int = BLOCK_CHARS) -> str:
    """``text`` as an HTML ``<pre>`` block, which Markdown does not parse; the closing
    tag cannot appear in it (``<`` is escaped)."""
    shown = for_terminal(_cut(text, limit))
    escaped = shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<pre>{escaped}</pre>"


def _json(value: Any) -> str:
    return json.dumps(serialize.value_to_json(value), indent=2, ensure_ascii=False)


def _status_word(status: Status) -> str:
    return {Status.FAIL: "fail", Status.ERRORED: "errored"}.get(status, status.value)


def _where(context: ReportContext, case: Case | None) -> str:
    where = suite_display_path(context.suite)
    if case is not None and case.line:
        where += f":{case.line}"
    if case is not None:
        where += f" [[{CASE_CLASS_TO_ARRAY.get(case.case_class, case.case_class)}]]"
    return where


def _failure(context: ReportContext, result: CaseResult, case: Case | None, note: str) -> list[str]:
    """One failure with what the case gave, expected and observed."""
    title = f"{inline(result.case_name)} {_status_word(result.status)}"
    if note:
        title += f" ({note})"
    lines = [
        "<details open>" if not note.startswith("known") else "<details>",
        f"<summary>{title}</summary>",
        "",
        f"{inline(_where(context, case))}",
        "",
        "**reason**",
        "",
        block(result.reason or ""),
    ]
    if case is not None:
        lines += ["", "**input**", "", block(_json(dict(case.input)))]
        lines += ["", "**expected**", "", block(_json(dict(case.expect)))]
    if result.observation is not None:
        observed = _observed(result.observation, {} if case is None else case.expect)
        lines += ["", "**observed**", "", block(observed)]
    if result.mismatches:
        lines += ["", "| where | expected | observed |", "| --- | --- | --- |"]
        for mismatch in result.mismatches[:20]:
            # A missed bound on a measurement reads as people read it (1129 ms), told
            # apart from its bound; every other value is shown exactly.
            seen = shown_mismatch_observed(mismatch) or _text(mismatch.observed)
            lines.append(
                f"| {inline(mismatch.path or '(value)')} "
                f"| {inline(_text(mismatch.expected))} | {inline(seen)} |"
            )
    lines += ["", "</details>", ""]
    return lines


def _reported_passes(results: Iterable[CaseResult], declared: dict[str, Case]) -> list[str]:
    """The passes whose expectation compares a key that only looks like a measurement:
    the runner measured nothing of it, so the pass is the implementation's word about
    itself, and the report says so beside what was expected."""
    passes = [r for r in results if r.status is Status.PASS and REPORTED_NOTE in (r.reason or "")]
    if not passes:
        return []
    lines = [f"#### Passes on what the implementation reported ({len(passes)})", ""]
    rows = []
    for result in passes[:200]:
        case = declared.get(result.case_name)
        expected = "" if case is None else _text(dict(case.expect))
        rows.append([inline(result.case_name), inline(result.reason or ""), inline(expected)])
    lines += _table(["case", "note", "expected"], rows)
    if len(passes) > 200:
        lines += [f"{len(passes) - 200} more such passes (the json report has them)", ""]
    return lines


def _observed(observation: Mapping[str, Any], expect: Mapping[str, Any]) -> str:
    """The observation as JSON, then each measurement held only to bounds
    (``elapsed_ms``, ``resident_memory_mb``) as people read it, told apart from its
    bounds (:func:`cer.judge.compare.shown_measurement`), in place of its raw float."""
    exact: dict[str, Any] = {}
    measured: list[str] = []
    for key, value in observation.items():
        shown = shown_measurement(str(key), value, expect)
        if shown is None:
            exact[key] = value
        else:
            measured.append(f"{key}: {shown}")
    return "\n".join([_json(exact), *measured])


def _text(value: Any) -> str:
    return json.dumps(serialize.value_to_json(value), ensure_ascii=False)


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    heads = list(header)
    lines = ["| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def render(context: ReportContext) -> str:
    """The report as GitHub-flavoured Markdown."""
    run, suite = context.run, context.suite
    verdict = context.verdict()
    check = verdict.baseline
    summary = run.summary
    declared = {case.name: case for case in suite.cases}
    target = run.target_module + (f" {suite.target_version}" if suite.target_version else "")
    seconds = (run.completed_at_ms - run.started_at_ms) / 1000
    lines = [
        f"### cer: {inline(target)} · {inline(run.implementation_id)}",
        "",
        f"**{inline(verdict.statement, 1000)}**",
        "",
    ]
    lines += _table(
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
        lines += [f"note: {inline(note)}", ""]
    bad = [r for r in run.results if r.status in (Status.FAIL, Status.ERRORED)]
    known = {} if check is None else {k.case_name: k for k in check.known}
    regressed = {} if check is None else {r.case_name: r for r in check.regressions}
    if check is not None:
        lines += [f"#### Regressions ({len(check.regressions)})", ""]
        if check.regressions:
            lines += _table(
                ["case", "status", "why"],
                ([inline(r.case_name), r.status, inline(r.why)] for r in check.regressions),
            )
        else:
            lines += ["None: every failure is listed in the baseline.", ""]
    ordered = [r for r in bad if r.case_name in regressed]
    ordered += [r for r in bad if r.case_name not in regressed and r.case_name not in known]
    ordered += [r for r in bad if r.case_name in known]
    if ordered:
        lines += [f"#### Failures ({len(ordered)})", ""]
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
            others = ", ".join(inline(name, 100) for name in alike[1:201])
            beyond = f" and {len(alike) - 201} more" if len(alike) > 201 else ""
            lines += [
                f"{len(alike)} cases not run for one cause, shown with the first "
                f"({inline(alike[0], 100)}) below; the others: {others}{beyond}",
                "",
            ]
    for number, result in enumerate(ordered, start=1):
        if number > DETAILED:
            rest = ordered[DETAILED:]
            names = ", ".join(inline(r.case_name, 100) for r in rest[:200])
            more = f" and {len(rest) - 200} more" if len(rest) > 200 else ""
            lines += [f"{len(rest)} more: {names}{more}", ""]
            break
        note = ""
        if result.case_name in regressed:
            note = "regression"
        elif result.case_name in known:
            note = "known failure"
        lines += _failure(context, result, declared.get(result.case_name), note)
    lines += _reported_passes(run.results, declared)
    if check is not None and check.stale:
        lines += [f"#### Stale baseline entries ({len(check.stale)})", ""]
        lines += ["These cases pass: remove their entries from the baseline.", ""]
        lines += _table(
            ["case", "entry", "line"],
            (
                [inline(s.case_name), inline(s.entry.case), str(s.entry.line or "")]
                for s in check.stale
            ),
        )
    if check is not None and check.known:
        lines += [f"#### Known failures ({len(check.known)})", ""]
        lines += _table(
            ["case", "status", "reason", "link"],
            (
                [
                    inline(k.case_name),
                    k.status,
                    inline(k.entry.reason),
                    inline(k.entry.link or ""),
                ]
                for k in check.known
            ),
        )
    coverage = context.coverage
    if coverage is not None:
        lines += ["#### Coverage", "", inline(coverage.headline(), 1000), ""]
        if coverage.needs_a_case:
            lines += [f"needs a case: {', '.join(inline(n) for n in coverage.needs_a_case)}", ""]
        for reference in coverage.unknown:
            lines += [f"unknown constraint: {inline(reference.message)}", ""]
    return "\n".join(lines).rstrip("\n") + "\n"

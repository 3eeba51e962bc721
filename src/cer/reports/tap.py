"""TAP version 14: one test point per case, in declared order.

A passed case is ``ok`` (followed by a comment when the pass rests on a key the
implementation reported about itself, such as ``latency_max``); a failed or errored one
``not ok`` with a YAML diagnostic block (message, severity, where the case is declared,
captured output); a skipped one ``ok`` with a ``# SKIP reason`` directive, as TAP
defines skipping. Strings in the YAML block are JSON-quoted, which YAML reads as
double-quoted scalars, so no captured text can break the block.
"""

from __future__ import annotations

import json
from typing import Any

from cer.judge.verdict import REPORTED_NOTE
from cer.model import Status
from cer.reports.context import ReportContext, suite_display_path
from cer.text.safetext import for_terminal

__all__ = ["render"]


def _description(text: str) -> str:
    """A test point description: one line, with ``\\`` and ``#`` escaped (TAP 14)."""
    one_line = for_terminal(" ".join(text.splitlines()), multiline=False)
    return one_line.replace("\\", "\\\\").replace("#", "\\#")


def _directive_text(text: str) -> str:
    return for_terminal(" ".join(text.splitlines()).strip(), multiline=False)


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, int | float):
        return json.dumps(value)
    text = str(value)
    # Text that would act on a terminal (bidi controls, C1 controls) is sent as JSON
    # escapes, which mean the same characters.
    return json.dumps(text, ensure_ascii=for_terminal(text) != text)


def render(context: ReportContext) -> str:
    """The run as a TAP 14 stream."""
    run, suite = context.run, context.suite
    lines = ["TAP version 14", f"1..{len(run.results)}"]
    lines += [f"# note: {_directive_text(note)}" for note in run.notes]
    declared = {case.name: case for case in suite.cases}
    file = suite_display_path(suite)
    flaky = context.flaky or frozenset()
    for number, result in enumerate(run.results, start=1):
        description = _description(result.case_name)
        if result.status is Status.PASS:
            lines.append(f"ok {number} - {description}")
            if result.reason and REPORTED_NOTE in result.reason:
                # A pass on a measurement-like key is the implementation's word about itself.
                lines.append(f"# {_directive_text(result.reason)}")
            continue
        if result.status is Status.SKIPPED:
            reason = _directive_text(result.reason or "")
            lines.append(f"ok {number} - {description} # SKIP {reason}".rstrip())
            continue
        lines.append(f"not ok {number} - {description}")
        diagnostics: list[tuple[str, Any]] = [
            ("message", result.reason or ""),
            ("severity", result.status.value),
            ("case_class", result.case_class),
            ("category", result.category),
        ]
        if result.elapsed_ms is not None:
            diagnostics.append(("duration_ms", result.elapsed_ms))
        if result.case_name in flaky:
            diagnostics.append(("flaky", True))
        lines.append("  ---")
        for key, value in diagnostics:
            lines.append(f"  {key}: {_scalar(value)}")
        case = declared.get(result.case_name)
        lines.append("  at:")
        lines.append(f"    file: {_scalar(file)}")
        if case is not None and case.line:
            lines.append(f"    line: {case.line}")
        if result.mismatches:
            lines.append("  mismatches:")
            for mismatch in result.mismatches:
                lines.append(f"    - path: {_scalar(mismatch.path)}")
                lines.append(f"      message: {_scalar(mismatch.message)}")
        for key, text in (
            ("stdout", result.stdout),
            ("stderr", result.stderr),
            ("traceback", result.traceback),
        ):
            if text:
                lines.append(f"  {key}: {_scalar(text)}")
        lines.append("  ...")
    summary = run.summary
    lines.append(
        f"# {summary.total} cases: {summary.passed} passed, {summary.failed} failed, "
        f"{summary.errored} errored, {summary.skipped} skipped — {context.verdict().statement}"
    )
    return "\n".join(lines) + "\n"

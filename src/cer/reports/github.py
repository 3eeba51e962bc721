"""GitHub Actions workflow annotations, pointing at each problem case's line.

``::error file=PATH,line=N,title=...::case: reason`` for every failed or errored case and
for each ``verifies`` entry naming no constraint (a typo is an error), ``::warning`` for
every case skipped for a reason other than deselection (skipping must stay visible), and
one ``::notice`` with the totals. Values are escaped as GitHub's workflow command rules
require: ``%``, CR and LF everywhere, and also ``:`` and ``,`` in properties.
"""

from __future__ import annotations

from cer.engine.options import OTHER_SHARD
from cer.model import Status
from cer.reports.context import ReportContext, suite_display_path
from cer.text.safetext import for_terminal

__all__ = ["escape_data", "escape_property", "render"]


def escape_data(text: str) -> str:
    """Escape the message part of a workflow command. Control characters other than
    line breaks, and bidi controls, are shown as escapes (``\\x1b``) first, so that the
    implementation's text cannot act on the log viewer."""
    text = "\r".join(for_terminal(part) for part in text.split("\r"))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value (``file=``, ``title=``) of a workflow command."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(
    kind: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    title: str | None = None,
) -> str:
    properties = []
    if file:
        properties.append(f"file={escape_property(file)}")
    if line:
        properties.append(f"line={line}")
    if title:
        properties.append(f"title={escape_property(title)}")
    head = f"::{kind}"
    if properties:
        head += " " + ",".join(properties)
    return f"{head}::{escape_data(message)}"


def render(context: ReportContext) -> str:
    """The run's annotations, one workflow command a line."""
    run, suite = context.run, context.suite
    file = suite_display_path(suite)
    lines_of = {case.name: case.line for case in suite.cases}
    flaky = context.flaky or frozenset()
    check = context.verdict().baseline
    known = frozenset() if check is None else frozenset(k.case_name for k in check.known)
    commands = []
    for result in run.results:
        line = lines_of.get(result.case_name)
        marker = " (flaky)" if result.case_name in flaky else ""
        if result.status in (Status.FAIL, Status.ERRORED):
            word = "failed" if result.status is Status.FAIL else "errored"
            if result.case_name in known:
                marker += " (known failure)"
            commands.append(
                _command(
                    "warning" if result.case_name in known else "error",
                    f"{result.case_name}: {result.reason or word}",
                    file=file,
                    line=line,
                    title=f"cer: {result.case_name} {word}{marker}",
                )
            )
        elif result.status is Status.SKIPPED and result.reason not in ("deselected", OTHER_SHARD):
            # a case left out on purpose (a selection, another shard's) is no finding
            commands.append(
                _command(
                    "warning",
                    f"{result.case_name}: skipped: {result.reason or ''}",
                    file=file,
                    line=line,
                    title=f"cer: {result.case_name} skipped",
                )
            )
    for stale in () if check is None else check.stale:
        commands.append(
            _command(
                "error",
                f"{stale.case_name} passes: remove it from the baseline",
                file=check.path if check is not None else None,
                line=stale.entry.line,
                title="cer: stale baseline entry",
            )
        )
    if context.coverage is not None:
        for reference in context.coverage.unknown:
            commands.append(
                _command(
                    "error",
                    reference.message,
                    file=file,
                    line=reference.line,
                    title="cer: unknown constraint",
                )
            )
    summary = run.summary
    commands.append(
        _command(
            "notice",
            f"{run.target_module} · {run.implementation_id}: {summary.total} cases, "
            f"{summary.passed} passed, {summary.failed} failed, {summary.errored} errored, "
            f"{summary.skipped} skipped — {context.verdict().statement}",
            title="cer",
        )
    )
    return "\n".join(commands) + "\n"

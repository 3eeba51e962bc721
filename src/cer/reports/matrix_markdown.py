"""The Markdown summary of a matrix: what a pull request comment or a CI job summary
holds about several implementations of one suite.

The ranking first (each implementation's counts, share passed and what it is by name
and version), then the disagreements as a table of status per implementation, the
cases with the same verdict in different words, and the cases every implementation
errored. Every value goes through :func:`cer.reports.markdown.inline`, the same helper
the single-run summary uses, so nothing an implementation said (a harness's declared
name, a distribution's metadata) can start Markdown or HTML on the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cer.matrix import Matrix, Row, describe_agree_on
from cer.model import Suite
from cer.reports.context import suite_display_path
from cer.reports.markdown import inline

__all__ = ["ROWS", "render"]

ROWS = 50
"""Disagreements (and other lists) shown before the rest is counted."""
_CHIPS = {
    "pass": "✅ pass",
    "fail": "❌ fail",
    "errored": "⚠️ error",
    "skipped": "⏭️ skip",
    "known": "🔷 known",
    None: "–",
}


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _names(rows: Sequence[Row]) -> str:
    shown = ", ".join(inline(row.case_name) for row in rows[:ROWS])
    if len(rows) > ROWS:
        shown += f", … {len(rows) - ROWS} more"
    return shown


def render(matrix: Matrix, suite: Suite, statements: Sequence[str] | None = None) -> str:
    """The matrix as Markdown; ``statements`` are the runs' verdict sentences in
    column order (their summaries' verdicts by default)."""
    target = matrix.columns[0].run.target_module
    if suite.target_version:
        target += f" {suite.target_version}"
    worded = matrix.words_differ
    lines = [
        f"## {inline(target)}: {len(matrix.columns)} implementations",
        "",
        f"{len(matrix.rows)} cases of {inline(suite_display_path(suite))} · "
        f"{len(matrix.disagreements)} disagreements"
        + (f", {len(worded)} worded differently" if worded else "")
        + f" (compared on {describe_agree_on(matrix.agree_on)})",
        "",
    ]
    columns = {column.label: (index, column) for index, column in enumerate(matrix.columns)}
    ranking = []
    for standing in matrix.ranking:
        index, column = columns[standing.label]
        origin = column.run.origin
        what = ""
        if origin is not None:
            what = inline(f"{origin.name} {origin.version}")
            if origin.source == "harness":
                what += " (declared)"
        verdict = statements[index] if statements else column.summary.verdict
        ranking.append(
            [
                str(standing.rank),
                inline(standing.label),
                what,
                f"{standing.percent:.1f}%",
                str(standing.passed),
                str(standing.failed),
                str(standing.errored),
                str(standing.skipped),
                str(standing.known),
                inline(verdict),
            ]
        )
    lines += _table(
        [
            "#",
            "implementation",
            "version",
            "share passed",
            "pass",
            "fail",
            "error",
            "skip",
            "known",
            "verdict",
        ],
        ranking,
    )
    lines.append("")
    if matrix.disagreements:
        lines += [f"### Disagreements ({len(matrix.disagreements)})", ""]
        rows = [
            [inline(row.case_name), *(_CHIPS[state] for state in row.states)]
            for row in matrix.disagreements[:ROWS]
        ]
        lines += _table(["case", *(inline(label) for label in matrix.labels)], rows)
        if len(matrix.disagreements) > ROWS:
            lines.append(f"\n… {len(matrix.disagreements) - ROWS} more disagreements")
        lines.append("")
    if worded:
        lines += [f"### Same verdict, different words ({len(worded)})", "", _names(worded), ""]
    if matrix.all_errored:
        lines += [
            f"### Every implementation errored ({len(matrix.all_errored)})",
            "",
            _names(matrix.all_errored),
            "",
        ]
    lines.append("A known failure is one its implementation's baseline lists; it is never a pass.")
    return "\n".join(lines) + "\n"

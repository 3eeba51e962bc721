"""The Markdown summary of a matrix: what a pull request comment or a CI job summary
holds about several implementations of one suite.

The ranking first (each implementation's counts, share passed and what it is by name
and version), then the disagreements as a table of status per implementation, the
cases with the same verdict in different words, and the cases every implementation
errored. Every value goes through :func:`cer.reports.markdown.inline`, the same helper
the single-run summary uses, so nothing an implementation said (a harness's declared
name, a distribution's metadata) can start Markdown or HTML on the page.

Every list is shown whole as long as the page stays within
:data:`cer.reports.markdown.SIZE_LIMIT` bytes (GitHub's 1 MiB job-summary limit); past
it the page stops, saying so and where every case is (the JSON results, the matrix's
HTML page).
"""

from __future__ import annotations

from collections.abc import Sequence

from cer.model import Suite
from cer.reports.context import suite_display_path
from cer.reports.markdown import Page, inline
from cer.results.matrix import Matrix, Row, describe_agree_on

__all__ = ["WHERE_THE_REST_IS", "render"]

WHERE_THE_REST_IS = (
    "every case of every implementation is in the JSON results (`cer run --format json`, "
    "or `--report json=PATH`: a file per implementation) and the matrix's HTML page "
    "(`--report html=PATH`)"
)
"""Where a matrix page cut for size sends its reader."""
_CHIPS = {
    "pass": "✅ pass",
    "fail": "❌ fail",
    "errored": "⚠️ error",
    "skipped": "⏭️ skip",
    "known": "🔷 known",
    None: "–",
}


def _names(rows: Sequence[Row]) -> str:
    return ", ".join(inline(row.case_name) for row in rows)


def render(matrix: Matrix, suite: Suite, statements: Sequence[str] | None = None) -> str:
    """The matrix as Markdown; ``statements`` are the runs' verdict sentences in
    column order (their summaries' verdicts by default)."""
    target = matrix.columns[0].run.target_module
    if suite.target_version:
        target += f" {suite.target_version}"
    worded = matrix.words_differ
    page = Page(where=WHERE_THE_REST_IS)
    page.add(
        f"## {inline(target)}: {len(matrix.columns)} implementations",
        "",
        f"{len(matrix.rows)} cases of {inline(suite_display_path(suite))} · "
        f"{len(matrix.disagreements)} disagreements"
        + (f", {len(worded)} worded differently" if worded else "")
        + f" (compared on {describe_agree_on(matrix.agree_on)})",
        "",
    )
    columns = {column.label: (index, column) for index, column in enumerate(matrix.columns)}
    ranking = []
    for standing in matrix.ranking:
        index, column = columns[standing.label]
        origin = column.run.origin
        what = ""
        if origin is not None:
            what = inline(f"{origin.name} {origin.version}", cell=True)
            if origin.source == "harness":
                what += " (declared)"
        verdict = statements[index] if statements else column.summary.verdict
        ranking.append(
            [
                str(standing.rank),
                inline(standing.label, cell=True),
                what,
                f"{standing.percent:.1f}%",
                str(standing.passed),
                str(standing.failed),
                str(standing.errored),
                str(standing.skipped),
                str(standing.known),
                inline(verdict, cell=True),
            ]
        )
    page.table(
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
    page.add("A known failure is one its implementation's baseline lists; it is never a pass.", "")
    if matrix.disagreements:
        page.add(f"### Disagreements ({len(matrix.disagreements)})", "")
        rows = (
            [inline(row.case_name, cell=True), *(_CHIPS[state] for state in row.states)]
            for row in matrix.disagreements
        )
        page.table(["case", *(inline(label, cell=True) for label in matrix.labels)], rows)
    if worded:
        page.add(f"### Same verdict, different words ({len(worded)})", "")
        page.add(_names(worded), "")
    if matrix.all_errored:
        page.add(f"### Every implementation errored ({len(matrix.all_errored)})", "")
        page.add(_names(matrix.all_errored), "")
    return page.text()

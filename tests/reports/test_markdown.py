"""The Markdown report reads well raw: names and values in code spans (not entity
references), input and expect as TOML, what cer observed apart from what the
implementation returned, each failure's place in the suite, every skipped case named
with why; and it stays within GitHub's 1 MiB job-summary limit, saying where the rest
is, as the matrix page does."""

from __future__ import annotations

from pathlib import Path

import pytest

from cer.model import CaseResult, RunResult, Status, Suite
from cer.reports import markdown, matrix_markdown
from cer.reports.context import ReportContext
from cer.results.matrix import build_matrix
from cer.suite.loader import load_suite


def _suite(tmp_path: Path, count: int, name: str = "a-hyphenated-name") -> Suite:
    cases = "".join(
        f'[[cases]]\nname = "{name}-{i}"\ncategory = "functional"\n'
        f'input = {{ text = "x{i}", n = {i} }}\n'
        f"expect = {{ output = {i}, elapsed_ms_max = 5000 }}\n\n"
        for i in range(count)
    )
    path = tmp_path / "evals.toml"
    path.write_text(f'commonsformat_evals = "0.2"\ntarget = "demo"\n\n{cases}', encoding="utf-8")
    return load_suite(path)


def _run(suite: Suite, status: Status, reason: str, implementation: str = "m:f") -> RunResult:
    results = tuple(
        CaseResult(
            case.name,
            case.case_class,
            case.category,
            status,
            reason,
            observation={"output": "y" * 2000, "crashed": False, "elapsed_ms": 12.0},
            position=case.position,
        )
        for case in suite.cases
    )
    return RunResult(
        "r", "demo", f"{implementation}@abc", 0, 1, results, implementation=implementation
    )


def test_a_failure_reads_well_raw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    suite = _suite(tmp_path, 1)
    text = markdown.render(ReportContext(_run(suite, Status.FAIL, "output: wrong"), suite))
    assert "<summary><code>a-hyphenated-name-0</code> fail</summary>" in text
    assert "&#" not in text
    assert "at `evals.toml:4 [[cases]]`" in text
    assert '```toml\ntext = "x0"\nn = 0\n```' in text  # the input as the suite has it
    assert "```toml\noutput = 0\nelapsed_ms_max = 5000\n```" in text
    returned, observed = text.split("returned:", 1)[1].split("observed by cer:", 1)
    assert 'output = "yyy' in returned and "elapsed_ms" not in returned
    assert "elapsed_ms = 12 ms" in observed and "crashed" not in observed


def test_every_skipped_case_is_named_with_why(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 3)
    run = _run(suite, Status.SKIPPED, "category not supported: functional")
    text = markdown.render(ReportContext(run, suite))
    assert "#### Skipped (3)" in text
    assert "`category not supported: functional`, 3 cases:" in text
    assert "`a-hyphenated-name-0`, `a-hyphenated-name-1`, `a-hyphenated-name-2`" in text


def test_a_report_of_many_failures_stays_within_a_job_summary(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 3000)
    run = _run(suite, Status.FAIL, "output: " + "why " * 70)
    text = markdown.render(ReportContext(run, suite))
    size = len(text.encode("utf-8"))
    assert size <= markdown.SIZE_LIMIT < 1024 * 1024
    assert size > markdown.SIZE_LIMIT * 0.9  # filled, not stopped at a count
    assert "**This report stops here**" in text and "--report json=PATH" in text
    assert text.count("<details") == markdown.DETAILED  # the cards whole, the rest a table
    assert text.count("<details") == text.count("</details>")


def test_a_small_report_is_whole(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 60)
    text = markdown.render(ReportContext(_run(suite, Status.FAIL, "output: wrong"), suite))
    assert "stops here" not in text
    assert "`a-hyphenated-name-59`" in text  # past the cards, in the table


@pytest.mark.parametrize("count", [60, 4000])
def test_the_matrix_page_lists_by_size_not_by_count(tmp_path: Path, count: int) -> None:
    suite = _suite(tmp_path, count, "n" * 290)
    runs = [_run(suite, Status.PASS, ""), _run(suite, Status.FAIL, "output: wrong", "n:f")]
    matrix = build_matrix(suite, runs, ["good", "bad"])
    text = matrix_markdown.render(matrix, suite)
    assert len(text.encode("utf-8")) <= markdown.SIZE_LIMIT
    assert f"### Disagreements ({count})" in text
    if count == 60:
        assert f"`{'n' * 290}-59`" in text and "stops here" not in text
    else:
        assert "**This report stops here**" in text and "--format json" in text

"""The HTML report for a reviewer: every case listed (passes collapsed) with its input,
expected and observed, narrowed by status and group without a script; a chart with a
line per implementation over full runs only, partial runs marked; group labels that do
not break mid-word; and the recorded runs' partial flag it rests on."""

from __future__ import annotations

import re
import tomllib

import support
from cer.history.database import History
from cer.history.records import RunRecord
from cer.model import Status, Summary
from cer.reports import ReportContext, render_report
from cer.reports.html import page_model
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from support import Module

ROOT = support.ROOT

SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "doubles-two"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "doubles-three"
category = "functional"
input = { x = 3 }
expect = { output = 6 }

[[adversarial]]
name = "rejects-negative"
category = "input-validation"
input = { x = -1 }
expect = { rejects = true }
"""
IMPL = "def f(x):\n    if x == 3:\n        return 7\n    return x * 2\n"


def _context(module: Module) -> ReportContext:
    module.suite(SUITE)
    run = module.run(f"{module.impl(IMPL)}:f")
    return ReportContext(run, load_suite(module.root / "evals.toml"))


def test_every_case_is_listed_with_input_expected_and_observed(module: Module) -> None:
    context = _context(module)
    assert [r.status for r in context.run.results] == [Status.PASS, Status.FAIL, Status.FAIL]
    page = render_report("html", context)
    rows = re.findall(r'<details class="row (\w+) [^"]*"( open)?>', page)
    assert rows == [("pass", ""), ("fail", ""), ("fail", "")]  # all collapsed
    passed = page[page.index('<details class="row pass') :]
    passed = passed[: passed.index("</details>")]
    assert "doubles-two" in passed
    assert "{ x = 2 }" in passed and "output = 4" in passed  # input, expected
    assert re.search(r"observed</div>\s*<pre>output = 4", passed)  # observed, for a pass


def test_the_list_is_narrowed_by_status_and_group_without_a_script(module: Module) -> None:
    page = render_report("html", _context(module))
    assert "<script" not in page
    for status in ("pass", "fail", "errored", "skipped"):
        assert f'<input class="pick" type="radio" name="status" id="st-{status}">' in page
        assert f"#st-{status}:checked ~ .rows > .row:not(.{status}) {{ display: none; }}" in page
    model = page_model(_context(module))
    labels = [group.label for group in model.case_groups]
    assert labels == [
        "class functional",
        "category functional",
        "class adversarial",
        "category input-validation",
    ]
    for group in model.case_groups:
        assert f"#gr-{group.number}:checked ~ .rows > .row:not(.g{group.number})" in page
    assert [row.groups for row in model.rows] == ["g1 g2", "g1 g2", "g3 g4"]


def test_group_labels_do_not_break_mid_word() -> None:
    template = (ROOT / "src/cer/reports/templates/report.html.j2").read_text(encoding="utf-8")
    rule = next(line for line in template.splitlines() if "table.groups td.name" in line)
    assert "anywhere" not in rule and "break-all" not in rule


def _record(number: int, implementation: str, passed: int, *, partial: bool = False) -> RunRecord:
    skipped = 2 if partial else 0
    return RunRecord(
        run_id=f"run{number:04d}" + "0" * 24,
        target_module="t",
        implementation_id=f"{implementation}@abc",
        started_at_ms=1_700_000_000_000 + number * 60_000,
        completed_at_ms=1_700_000_000_000 + number * 60_000 + 10,
        summary=Summary(3, passed, 3 - passed - skipped, skipped, 0),
        implementation=implementation,
        partial=partial,
    )


def test_the_chart_has_a_line_per_implementation_over_full_runs(module: Module) -> None:
    context = _context(module)
    mine = context.run.implementation
    records = tuple(
        reversed(
            [
                _record(1, mine, 1),
                _record(2, "other:g", 3),
                _record(3, mine, 1, partial=True),
                _record(4, mine, 2),
                _record(5, "other:g", 2),
            ]
        )
    )
    chart = page_model(ReportContext(context.run, context.suite, history=records)).chart
    assert chart is not None
    assert [(s.label, s.runs) for s in chart.series] == [(mine, 2), ("other:g", 2)]
    assert len(chart.partial) == 1 and "partial run: 1 of 3 cases ran" in chart.partial[0].title
    assert len(chart.columns) == 2  # this implementation's full runs only
    page = render_report("html", ReportContext(context.run, context.suite, history=records))
    assert page.count('class="partialmark"') == 1
    assert "1 partial run, not counted" in page


def test_the_history_knows_which_runs_were_partial(module: Module) -> None:
    module.suite(SUITE)
    impl = module.impl(IMPL)
    suite = load_suite(module.root / "evals.toml")
    with History.open(module.root / "h.sqlite") as history:
        history.record(module.run(f"{impl}:f"), suite)
        history.record(module.run(f"{impl}:f", selection=Selection(names={"doubles-two"})), suite)
        partial = [record.partial for record in history.runs(None)]
    assert partial == [True, False]  # newest first


def test_jinja2_is_a_regular_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert any(item.lower().startswith("jinja2") for item in project["dependencies"])

"""The case's input beside every failure and error, on every surface, through one
formatter (cer.text.tomltext): the text report, JUnit bodies, the HTML cards, the JSON
results, the pytest plugin's text and the terminal UI's Reason pane."""

from __future__ import annotations

import datetime
import json
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cer.model import CaseResult, Mismatch, RunResult, Status, Suite
from cer.pytest_plugin.suite import failure_text
from cer.reports import ReportContext, render_report, results_document
from cer.reports.text import render_report as text_report
from cer.suite.loader import load_suite
from cer.text.tomltext import INPUT_SHOWN_CHARS, inline, input_line, shown_input, table_lines
from cer.tui.state.board import Row
from cer.tui.state.details import render_case, render_reason
from cer.tui.state.kept import KeptResult
from cer.tui.state.styles import DetailStyles
from support import Module

LONG = "x" * (INPUT_SHOWN_CHARS + 50)
SUITE = f"""
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "passes"
category = "functional"
input = {{ text = "1.2.3", strict = true }}
expect = {{ output = "ok" }}

[[cases]]
name = "fails"
category = "functional"
input = {{ text = "1.2.3-beta", when = 2024-01-02 }}
expect = {{ output = "rejected" }}

[[adversarial]]
name = "errors"
category = "input-validation"
input = {{ text = "{LONG}" }}
expect = {{ error = true }}
"""


@pytest.fixture
def context(module: Module) -> ReportContext:
    module.suite(SUITE)
    suite = load_suite(module.root / "evals.toml")
    passed, failed, errored = suite.cases
    results = (
        CaseResult(
            passed.name,
            passed.case_class,
            passed.category,
            Status.PASS,
            None,
            observation={"output": "ok"},
            position=1,
        ),
        CaseResult(
            failed.name,
            failed.case_class,
            failed.category,
            Status.FAIL,
            "output: expected 'rejected', observed 'accepted'",
            observation={"output": "accepted"},
            mismatches=(
                Mismatch(
                    "output",
                    "output: expected 'rejected', observed 'accepted'",
                    "rejected",
                    "accepted",
                ),
            ),
            position=2,
        ),
        CaseResult(
            errored.name,
            errored.case_class,
            errored.category,
            Status.ERRORED,
            "the implementation raised ValueError: boom",
            position=3,
        ),
    )
    run = RunResult("r", "t", "impl:f@abc", 0, 10, results, implementation="impl:f")
    return ReportContext(run, suite)


def _place(suite: Suite, name: str) -> str:
    case = next(case for case in suite.cases if case.name == name)
    return f"{suite.path.name}:{case.line}"


# --- the formatter ---------------------------------------------------------------------


def test_inline_is_toml_that_reads_back() -> None:
    value = {
        "a b": 1,
        "text": 'quote " back \\ new\nline',
        "big": 1e20,
        "whole": 2.0,
        "day": datetime.date(2024, 1, 2),
        "items": [1, {"q": 2.5}, []],
        "nested": {"deep": {"x": False}},
    }
    assert tomllib.loads(f"v = {inline(value)}")["v"] == value
    assert tomllib.loads("\n".join(table_lines(value))) == value


def test_control_and_bidi_characters_are_escaped_on_one_line() -> None:
    shown = inline({"s": "a\x1b[2J\u202eb\rc"})
    assert "\x1b" not in shown and "\u202e" not in shown and "\r" not in shown
    assert "\\u001b" in shown and "\\u202e" in shown and "\\r" in shown
    assert tomllib.loads(f"v = {shown}")["v"] == {"s": "a\x1b[2J\u202eb\rc"}


def test_an_int_too_long_for_text_is_named_not_raised() -> None:
    assert inline(10**5000).startswith('"<an int of about 5001 digits>')


def test_a_long_input_is_cut_and_says_where_it_is_whole() -> None:
    line = input_line({"text": LONG}, "evals.toml:12")
    assert line.startswith('input = { text = "xxx')
    assert "…" in line and "more characters; whole at evals.toml:12" in line
    assert len(line) < INPUT_SHOWN_CHARS + 80
    assert not shown_input({"text": "short"}).cut


# --- the surfaces ----------------------------------------------------------------------


def test_the_text_report_shows_the_input_of_failures_and_errors(context: ReportContext) -> None:
    text = text_report(context.run, context.suite)
    assert 'input = { text = "1.2.3-beta", when = 2024-01-02 }' in text
    assert f"whole at {_place(context.suite, 'errors')}" in text
    # A pass says nothing unless asked; its input is not printed as a failure's is.
    assert '"1.2.3", strict' not in text


def test_junit_failure_and_error_bodies_carry_the_input(context: ReportContext) -> None:
    root = ET.fromstring(render_report("junit", context))
    failure = root.find(".//testcase[@name='fails']/failure")
    error = root.find(".//testcase[@name='errors']/error")
    assert failure is not None and error is not None
    assert 'input = { text = "1.2.3-beta", when = 2024-01-02 }' in (failure.text or "")
    assert "whole at" in (error.text or "")


def test_html_cards_show_input_expected_and_the_whole_input(context: ReportContext) -> None:
    page = render_report("html", context)
    assert "{ text = &#34;1.2.3-beta&#34;, when = 2024-01-02 }" in page
    assert "output = &#34;rejected&#34;" in page
    # The long input is cut on the card, and whole inside its own <details>.
    assert f"text = &#34;{LONG}&#34;" in page
    assert "the whole input" in page


def test_json_has_input_and_expected_beside_the_observation_of_passes(
    context: ReportContext,
) -> None:
    document = results_document(context)
    passed = document["results"][0]
    assert passed["status"] == "pass"
    assert passed["input"] == {"text": "1.2.3", "strict": True}
    assert passed["expected"] == {"output": "ok"}
    assert passed["observation"] == {"output": "ok"}
    json.dumps(document, allow_nan=False)


def test_the_pytest_plugin_uses_the_same_formatter(context: ReportContext) -> None:
    suite = context.suite
    case, result = suite.cases[1], context.run.results[1]
    text = failure_text(suite, case, result)
    assert f"    {input_line(case.input, _place(suite, 'fails'))}" in text


def test_the_reason_pane_shows_the_input_and_the_case_pane_shows_it_whole(
    context: ReportContext,
) -> None:
    styles = DetailStyles()
    suite = context.suite
    failed = Row(suite.cases[1], KeptResult.of(context.run.results[1]))
    reason = render_reason(failed, styles).plain
    assert 'input = { text = "1.2.3-beta", when = 2024-01-02 }' in reason
    errored = Row(suite.cases[2], KeptResult.of(context.run.results[2]))
    reason = render_reason(errored, styles).plain
    assert "more characters: the Case pane has it whole" in reason
    assert f'text = "{LONG}"' in render_case(suite.cases[2], styles).plain
    passed = Row(suite.cases[0], KeptResult.of(context.run.results[0]))
    assert "input =" not in render_reason(passed, styles).plain


def test_markup_in_an_input_is_shown_as_text(module: Module, tmp_path: Path) -> None:
    """The terminal UI never parses the input as markup: Rich's ``[bold]`` stays text."""
    module.suite(SUITE.replace("1.2.3-beta", "[bold red]x[/]"))
    suite = load_suite(module.root / "evals.toml")
    result = CaseResult("fails", "functional", "functional", Status.FAIL, "no", position=2)
    reason = render_reason(Row(suite.cases[1], KeptResult.of(result)), DetailStyles())
    assert "[bold red]x[/]" in reason.plain


def test_the_pytest_traceback_hides_runner_frames(context: ReportContext) -> None:
    from dataclasses import replace

    from cer.text.tracebacks import RUNNER_DIR

    suite = context.suite
    traceback = (
        "Traceback (most recent call last):\n"
        f'  File "{RUNNER_DIR}/worker/call.py", line 10, in call\n'
        "    return target(**case)\n"
        f'  File "{RUNNER_DIR}/worker/target.py", line 20, in run\n'
        "    return fn(x)\n"
        '  File "/home/me/impl.py", line 3, in f\n'
        '    raise ValueError("boom")\n'
        "ValueError: boom\n"
    )
    result = replace(context.run.results[2], traceback=traceback)
    text = failure_text(suite, suite.cases[2], result)
    assert "[2 runner frames hidden]" in text
    assert "worker/call.py" not in text
    assert 'File "/home/me/impl.py", line 3, in f' in text

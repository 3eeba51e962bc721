"""The operators ``K_any_of`` (strictly equal to one of the listed values) and
``K_unordered`` (an array equal up to order, as a multiset under strict equality):
each test fails if its rule is loosened."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from markdown_it import MarkdownIt

from cer.judge.compare import compare, unmatched
from cer.judge.verdict import Outcome, judge, vacuous_expectations
from cer.model import MISSING, Case, Mismatch, Status
from support import Module


def only(mismatches: tuple[Mismatch, ...]) -> Mismatch:
    assert len(mismatches) == 1, mismatches
    return mismatches[0]


def case(expect: dict[str, Any]) -> Case:
    return Case("c", "functional", "functional", 1, 1, {}, expect)


# ----------------------------------------------------------------------------- any_of


@pytest.mark.parametrize(
    ("choices", "observed"),
    [
        (["$.a", "$.b"], "$.b"),
        ([1, 2], 2),
        ([[1, 2], [2, 1]], [2, 1]),
        ([{"a": 1}, None], {"a": 1}),
        ([math.nan], math.nan),
    ],
)
def test_any_of_passes_when_one_choice_is_strictly_equal(choices: list[Any], observed: Any) -> None:
    assert compare({"k_any_of": choices}, {"k": observed}) == ()


@pytest.mark.parametrize(
    ("choices", "observed"),
    [
        ([1, 2], 1.0),
        ([1, 2], True),
        (["1"], 1),
        ([[1, 2]], [2, 1]),
        ([{"a": 1}], {"a": 1, "b": 2}),
        (["a"], "A"),
    ],
)
def test_any_of_fails_for_anything_not_strictly_equal(choices: list[Any], observed: Any) -> None:
    m = only(compare({"k_any_of": choices}, {"k": observed}))
    assert m.path == "k_any_of"
    assert m.message.startswith(f"k_any_of: expected k to equal one of {len(choices)} value")
    assert m.expected == choices and m.observed == observed


def test_any_of_names_what_was_not_reported_and_what_it_cannot_verify() -> None:
    missing = only(compare({"k_any_of": ["a"]}, {}))
    assert missing.observed is MISSING
    assert "implementation did not report k (expected one of 1 value ['a'])" in missing.message
    assert "cannot be verified" in only(compare({"k_any_of": "a"}, {"k": "a"})).message
    assert "verifies nothing" in only(compare({"k_any_of": []}, {"k": "a"})).message
    assert vacuous_expectations({"k_any_of": []}) == ["k_any_of lists no value"]
    result = judge(case({"k_any_of": []}), Outcome("returned", value={"k": "a"}))
    assert result.status is Status.ERRORED  # decided before anything could pass


def test_any_of_yields_to_a_reported_literal_key_only_when_k_is_not_reported() -> None:
    assert compare({"k_any_of": [1]}, {"k_any_of": [1]}) == ()
    assert only(compare({"k_any_of": [1]}, {"k_any_of": 1}))
    assert only(compare({"k_any_of": [1]}, {"k_any_of": [1], "k": 5})).path == "k_any_of"
    assert compare({"k_any_of": [1]}, {"k_any_of": 1, "k": 1}) == ()


# -------------------------------------------------------------------------- unordered


@pytest.mark.parametrize(
    ("expected", "observed"),
    [
        ([1, 2, 3], [3, 1, 2]),
        ([], []),
        ([1, 1, 2], [1, 2, 1]),
        ([{"k": 1}, {"k": [2, 3]}], [{"k": [2, 3]}, {"k": 1}]),
        ([math.nan, 0.0], [-0.0, math.nan]),
        ([[1, 2], [2, 1]], [[2, 1], [1, 2]]),
    ],
)
def test_unordered_passes_for_the_same_elements_in_any_order(
    expected: list[Any], observed: list[Any]
) -> None:
    assert compare({"rows_unordered": expected}, {"rows": observed}) == ()


@pytest.mark.parametrize(
    ("expected", "observed", "said"),
    [
        ([1, 1, 2], [1, 2, 2], "1 element (1) expected but not observed"),
        ([1, 2], [1, 2.0], "1 element (2.0) observed but not expected"),
        ([True], [1], "1 element (1) observed but not expected"),
        ([1, 2], [1, 2, 2], "observed 3 elements"),
        ([1, 2, 3], [1, 2], "1 element (3) expected but not observed"),
        ([[1, 2]], [[2, 1]], "1 element ([1, 2]) expected but not observed"),
        ([{"a": 1}], [{"a": 1, "b": 2}], "observed but not expected"),
    ],
)
def test_unordered_fails_for_a_different_multiset(
    expected: list[Any], observed: list[Any], said: str
) -> None:
    m = only(compare({"rows_unordered": expected}, {"rows": observed}))
    assert m.path == "rows_unordered"
    assert said in m.message, m.message


def test_unordered_needs_an_array_on_both_sides() -> None:
    m = only(compare({"rows_unordered": [1]}, {"rows": "1"}))
    assert "expected rows to be an array of 1 element in any order, observed str '1'" in m.message
    assert "cannot be verified" in only(compare({"rows_unordered": 1}, {"rows": [1]})).message
    assert "did not report rows" in only(compare({"rows_unordered": [1]}, {})).message


def test_unordered_pairs_offset_date_times_by_instant_and_offset() -> None:
    plus1 = timezone(timedelta(hours=1))
    a = datetime(2024, 1, 1, 12, tzinfo=UTC)
    same_instant_other_offset = a.astimezone(plus1)
    assert compare({"t_unordered": [a]}, {"t": [a]}) == ()
    assert only(compare({"t_unordered": [a]}, {"t": [same_instant_other_offset]}))


def test_unordered_names_a_bounded_number_of_elements() -> None:
    m = only(compare({"rows_unordered": list(range(100))}, {"rows": list(range(100, 200))}))
    assert "100 elements (0, 1, 2, 3, 4 and 95 more) expected but not observed" in m.message
    assert len(m.message) < 400


def test_unordered_is_fast_on_large_arrays() -> None:
    rows = [{"id": i, "tags": [str(i)]} for i in range(5_000)]  # quadratic: 25M comparisons
    assert unmatched(rows, list(reversed(rows))) == ([], [])
    missing, extra = unmatched([*rows, rows[0]], [*rows, rows[1]])
    assert missing == [rows[0]] and extra == [rows[1]]


def test_the_new_operators_never_choose_the_binding() -> None:
    result = judge(case({"html_any_of": ["a"]}), Outcome("returned", value="a"))
    assert result.status is Status.FAIL  # a bare value is observed as output
    assert "implementation did not report html" in (result.reason or "")
    assert "hint: a value that is not a table is observed as output" in (result.reason or "")


# ---------------------------------------------------------------------------- reports

REPORT_SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "one-of"
category = "functional"
input = { n = 0 }
expect = { path_any_of = ["$.a", "<b>$.b</b>"] }

[[cases]]
name = "any-order"
category = "functional"
input = { n = 1 }
expect = { rows_unordered = [1, 2, 3] }
"""

REPORT_IMPL = """\
def f(n):
    return {"path": "<script>", "rows": [3, 2, 2]}
"""


def test_every_report_shows_the_new_operators_mismatches(
    module: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import xml.etree.ElementTree as ET
    from html import unescape

    from cer.cli.main import main

    module.suite(REPORT_SUITE)
    module.impl(REPORT_IMPL, name="ops")
    monkeypatch.chdir(module.root)
    reports = ["junit=r.xml", "html=r.html", "markdown=r.md"]
    argv = ["run", "evals.toml", "--impl", "ops:f", "--no-history", "-v"]
    assert main([*argv, *[word for report in reports for word in ("--report", report)]]) == 1
    text = capsys.readouterr().out
    one_of = (
        "path_any_of: expected path to equal one of 2 values ['$.a', '<b>$.b</b>'], "
        "observed str '<script>'"
    )
    any_order = (
        "rows_unordered: expected rows to be an array of 3 elements in any order: 1 element (1) "
        "expected but not observed; 1 element (2) observed but not expected"
    )
    assert one_of in text and any_order in text

    assert main([*argv[:-1], "--format", "json"]) == 1
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["reason"] for r in results] == [one_of, any_order]

    failures = [c.find("failure") for c in ET.parse(module.root / "r.xml").iter("testcase")]
    bodies = [(f.text or "") + (f.get("message") or "") for f in failures if f is not None]
    assert any(one_of in body for body in bodies) and any(any_order in body for body in bodies)

    page = (module.root / "r.html").read_text()
    assert "<b>$.b</b>" not in page and "'<script>'" not in page
    assert one_of in unescape(page) and any_order in unescape(page)

    markdown = (module.root / "r.md").read_text()
    # the page is parsed as GitHub does: the hostile text is only ever code, never HTML
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(markdown)
    inline = [child for token in tokens for child in (token.children or [])]
    for token in [*tokens, *inline]:
        if token.type in ("html_block", "html_inline", "text"):
            assert "<script>" not in token.content and "<b>" not in token.content
    assert "path&#95;any&#95;of" in markdown or "path_any_of" in markdown
    assert "rows" in markdown and "any order" in markdown


CHECKED_SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "good"
category = "functional"
expect = { path_any_of = ["a"], rows_unordered = [] }

[[cases]]
name = "not-an-array"
category = "functional"
expect = { path_any_of = "a" }

[[cases]]
name = "unordered-scalar"
category = "functional"
expect = { rows_unordered = 3 }

[[cases]]
name = "no-choice"
category = "functional"
expect = { path_any_of = [] }

[[cases]]
name = "bound-of-text"
category = "functional"
expect = { elapsed_ms_max = "10" }
"""


def test_cer_check_reports_what_the_new_operators_cannot_verify(tmp_path: Any) -> None:
    from cer.cli.check import check_suite

    (tmp_path / "evals.toml").write_text(CHECKED_SUITE, encoding="utf-8")
    report = check_suite(tmp_path / "evals.toml")
    errors = [finding.message for finding in report.errors]
    assert errors == [
        "case \"not-an-array\": path_any_of: it must be an array, not str 'a' (the case would "
        "fail whatever the implementation does)",
        'case "unordered-scalar": rows_unordered: it must be an array, not int 3 (the case '
        "would fail whatever the implementation does)",
        'case "no-choice": path_any_of lists no value, so it verifies nothing (the case would '
        "be errored)",
        'case "bound-of-text": elapsed_ms_max: the bound must be a number, but expect gives '
        "str '10' (the case would fail whatever the implementation does)",
    ]

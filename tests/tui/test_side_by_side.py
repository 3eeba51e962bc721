"""The pure parts of several implementations: the Matrix view's sections and lines, the
column heads, and the side-by-side comparison of one case, without Textual."""

from __future__ import annotations

from dataclasses import replace

from cer.model import Case, CaseResult, RunResult, Status
from cer.results.matrix import build_matrix
from cer.tui.state.board import Row
from cer.tui.state.formatting import column_labels
from cer.tui.state.kept import KeptResult
from cer.tui.state.matrix_layout import MatrixLayout, differs_in, sections
from cer.tui.state.side_by_side import LaneRow as Lane
from cer.tui.state.side_by_side import compare_lanes, render_details_many
from cer.tui.state.styles import DetailStyles

from .helpers import make_case, make_suite, passing, result_for

STYLES = DetailStyles()


def run_of(impl: str, results: list[CaseResult]) -> RunResult:
    return RunResult(f"run-{impl}", "calc", f"{impl}@x", 0, 10, tuple(results), implementation=impl)


def observed(case: Case, status: Status, **observation: object) -> CaseResult:
    return result_for(case, status, observation=observation)


def nothing(case: Case, reason: str) -> CaseResult:
    return replace(result_for(case, Status.ERRORED, reason=reason), observation=None)


CASES = [
    make_case(name, i)
    for i, name in enumerate(["alike", "typed", "silent", "both-fail", "all-errored", "skipped"], 1)
]
SUITE = make_suite(CASES)
A = [
    observed(CASES[0], Status.PASS, value=1),
    observed(CASES[1], Status.PASS, value=2),
    observed(CASES[2], Status.PASS, value=3),
    observed(CASES[3], Status.FAIL, value=4),
    nothing(CASES[4], "boom"),
    result_for(CASES[5], Status.SKIPPED, reason="deselected"),
]
B = [
    observed(CASES[0], Status.PASS, value=1),
    observed(CASES[1], Status.PASS, value=2.0),
    nothing(CASES[2], "TypeError: x"),
    observed(CASES[3], Status.FAIL, value=4),
    nothing(CASES[4], "bang"),
    result_for(CASES[5], Status.SKIPPED, reason="deselected"),
]


def test_sections_put_disagreements_first() -> None:
    runs = [run_of("a:f", A), run_of("b:f", B)]
    matrix = build_matrix(SUITE, runs, ["a", "b"], agree_on="all")
    found = sections(matrix)
    assert [(s.kind, [r.case_name for r in s.rows]) for s in found] == [
        ("disagree", ["typed", "silent"]),
        ("all_errored", ["all-errored"]),
        ("failing", ["both-fail"]),
        ("passed", ["alike"]),
        ("deselected", ["skipped"]),
    ]
    assert found[0].title.startswith("≠ 2 disagreements")
    assert differs_in(matrix.row("typed")) == "value"
    assert differs_in(matrix.row("silent")) == "b observed nothing"
    layout = MatrixLayout(matrix)
    lines = [layout.line(entry).plain.rstrip() for entry in layout.entries()]
    assert lines[:3] == [
        " ≠ 2 disagreements: the implementations observed different things",
        ' ≠ typed        ✔ pass   ✔ pass   { source = "typed input" }    value',
        ' ≠ silent       ✔ pass   ‼ error  { source = "silent input" }   b observed nothing',
    ]
    assert layout.header().plain.split() == ["case", "a", "b", "input", "differs", "in"]
    totals = [line.plain.rstrip() for line in layout.totals()]
    assert totals[0].split() == ["passed", "3", "2"]
    assert "   ranking, fewest unsuccessful cases first" in totals
    assert totals[-2:] == [
        "   a  a:f@x — nonconformant",
        "   b  b:f@x — nonconformant",
    ]


def test_column_heads_drop_a_shared_prefix() -> None:
    assert column_labels(["calc_ref", "calc_sloppy", "calc_harness"]) == (
        "ref",
        "sloppy",
        "harness",
    )
    assert column_labels(["ref", "other"]) == ("ref", "other")
    assert column_labels(["calc_", "calc_x"]) == ("calc_", "calc_x")
    assert column_labels(["only_one"]) == ("only_one",)


def lanes_for(index: int) -> list[Lane]:
    case = CASES[index]
    return [
        Lane("a", Row(case, KeptResult.of(A[index]))),
        Lane("b", Row(case, KeptResult.of(B[index])), flaky=True),
    ]


def test_compare_lanes_groups_like_the_matrix() -> None:
    typed = compare_lanes(lanes_for(1))
    assert typed.disagree and typed.differing_keys == ("value",)
    assert [side.labels for side in typed.sides] == [("a",), ("b",)]
    assert compare_lanes(lanes_for(0)).sides[0].labels == ("a", "b")
    assert not compare_lanes(lanes_for(0)).disagree
    assert compare_lanes(lanes_for(4)).all_errored
    assert compare_lanes(lanes_for(5)).compared == 0
    # A label the matrix leaves out is not compared.
    left = compare_lanes(lanes_for(2), unobserved=("b",))
    assert not left.disagree and left.left_out == ("b",)


def test_details_of_several_implementations() -> None:
    details = render_details_many(
        CASES[1], lanes_for(1), STYLES, coverages=(), suite_name="evals.toml"
    )
    diff = [line.plain for line in details.diff]
    assert diff[:4] == [
        "≠ a ✔ pass  against  b ✔ pass",
        "▸ value",
        "  a: int 2",
        "  b: float 2.0",
    ]
    assert "── a against the suite ──" in diff and "── b against the suite ──" in diff
    output = [line.plain for line in details.output]
    assert output[0] == "══ a ══" and "══ b ══" in output
    silent = render_details_many(CASES[2], lanes_for(2), STYLES)
    assert "  b observed nothing: TypeError: x" in [line.plain for line in silent.diff]
    empty = render_details_many(None, (), STYLES)
    assert [line.plain for line in empty.diff] == ["No case selected."]
    assert passing(CASES[0]).observation == {}

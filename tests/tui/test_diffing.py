"""Diffs make whitespace visible and stay cheap on large strings."""

from __future__ import annotations

from cer.model import MISSING, CaseResult, Mismatch, Status
from cer.tui.state.diffing import (
    DiffStyles,
    Sides,
    describe_value,
    diff_strings,
    render_mismatch,
    render_result_diff,
    render_values,
)

STYLES = DiffStyles()


def plain(lines: list) -> list[str]:  # type: ignore[type-arg]
    return [line.plain for line in lines]


def test_tabs_trailing_spaces_and_newlines_are_visible() -> None:
    lines = plain(diff_strings("a\tb  \nend\n", "a    b\nend", STYLES))
    assert "- 1 │ a→  b··⏎" in lines
    assert "+ 1 │ a····b⏎" in lines
    assert "- 2 │ end⏎" in lines
    assert "+ 2 │ end" in lines


def test_carriage_returns_and_invisible_characters_are_marked() -> None:
    text = "\n".join(plain(diff_strings("x\r\ny\u200b\n", "x\ny\u00a0\n", STYLES)))
    assert "x␍⏎" in text
    assert "⟨U+200B⟩" in text
    assert "⍽" in text


def test_empty_strings_are_named() -> None:
    text = "\n".join(plain(diff_strings("", "x\n", STYLES)))
    assert "(expected the empty string)" in text
    assert "+ 1 │ x⏎" in text


def test_only_changed_hunks_of_large_html_are_rendered() -> None:
    expected = "".join(f"<p>paragraph {i} with some text</p>\n" for i in range(20_000))
    observed = expected.replace("<p>paragraph 10000 ", "<p>paragraph 10000  ")
    lines = plain(diff_strings(expected, observed, STYLES))
    assert len(lines) < 20
    assert any(line.startswith("- 10001 │") for line in lines)
    assert any(line.startswith("+ 10001 │") and "··with" in line for line in lines)


def test_long_single_line_uses_prefix_and_suffix() -> None:
    expected = "x" * 50_000 + "a" + "y" * 50_000
    observed = "x" * 50_000 + "b" + "y" * 50_000
    lines = diff_strings(expected, observed, STYLES)
    removed = lines[-2]
    strong = [span for span in removed.spans if span.style == STYLES.removed_strong]
    assert strong, "the differing character is highlighted"


def test_values_and_missing_observations() -> None:
    text = "\n".join(plain(render_mismatch(Mismatch("value", "differs", 2.0, 2), STYLES)))
    assert "expected: 2.0" in text and "observed: 2" in text
    missing = "\n".join(plain(render_mismatch(Mismatch("html", "missing", "x", MISSING), STYLES)))
    assert "observed: <missing>" in missing
    nested = "\n".join(
        plain(
            render_mismatch(Mismatch("out", "lists differ", [1, {"a": 1}], [1, {"a": 2}]), STYLES)
        )
    )
    assert "- 1 │ [1, {'a': 1}]" in nested and "+ 1 │ [1, {'a': 2}]" in nested


def test_results_without_mismatches() -> None:
    ok = CaseResult("c", "functional", "functional", Status.PASS)
    assert plain(render_result_diff(ok, STYLES)) == ["No differences: the case passed."]
    errored = CaseResult("c", "functional", "functional", Status.ERRORED, reason="boom")
    assert plain(render_result_diff(errored, STYLES)) == ["boom"]


def test_two_implementations_are_named_and_typed() -> None:
    sides = Sides("ref", "sloppy", typed=True)
    lines = plain(render_mismatch(Mismatch("value", "", 2.0, 2), STYLES, sides))
    assert lines == ["▸ value", "  ref: float 2.0", "  sloppy: int 2"]
    text = plain(render_values("a\tb\n", "", STYLES, sides))
    assert text[0] == "  (sloppy observed the empty string)"
    assert text[1] == "- ref   + sloppy"
    assert text[2] == "@@ ref 1-1, sloppy 1-0 @@"
    assert describe_value(MISSING) == "<missing>" and describe_value(None) == "None"
    # Expected against observed stays as it was.
    assert plain(render_values(1, 2, STYLES)) == ["  expected: 1", "  observed: 2"]


def test_a_missed_bound_on_a_measurement_reads_as_people_read_it() -> None:
    """The Diff pane shows the bound's message (``observed 1129 ms``), never the raw
    float; a float compared for equality still shows both values exactly."""
    from cer.judge.compare import compare

    (bound,) = compare({"elapsed_ms_max": 1000}, {"elapsed_ms": 1129.4466920007835})
    shown = "\n".join(plain(render_mismatch(bound, STYLES)))
    assert "observed 1129 ms" in shown
    assert "1129.44" not in shown
    (equal,) = compare({"output": 0.3}, {"output": 0.30000000000000004})
    assert "0.30000000000000004" in "\n".join(plain(render_mismatch(equal, STYLES)))

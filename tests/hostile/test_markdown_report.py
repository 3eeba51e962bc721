"""The Markdown report shows what the implementation sent as inert text: no HTML, no
Markdown syntax, no link, no table pipe, no mention and no code fence of its can take
effect on the page (a job summary or a pull request comment). The report is parsed as
GitHub parses it (CommonMark with tables and raw HTML): the implementation's text must
come out only as the content of code spans, code blocks and escaped HTML text, whole,
and never as markup."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from markdown_inert import PARSER, assert_markdown_inert, walk

from cer.cli.commands import main
from cer.reports.markdown import block, html_inline, inline
from cer.text.safetext import for_terminal

HOSTILE = (
    "</code></pre><script>alert(1)</script> | x | ![img](https://evil/x.png) "
    "[click](javascript:alert(1)) @octocat #1 **bold** `tick` ~~~\n```\n# heading\x1b[2J\u202e"
)
MARKERS = ("script", "evil", "javascript", "octocat", "bold", "tick", "heading", "click")
"""Words of HOSTILE that must never be in the page's plain text."""

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "lies"
category = "functional"
input = { x = 1 }
expect = { output = 1 }
"""

IMPL_RAISES = f"""
def run(x):
    raise ValueError({HOSTILE!r})
"""

IMPL_KEYS = f"""
def run(x):
    return {{{HOSTILE!r}: {HOSTILE!r}}}
"""

IMPL_OUTPUT = f"""
def run(x):
    return {{"output": {HOSTILE!r}}}
"""

_PARSER = PARSER
_walk = walk


def _assert_inert(text: str) -> list[Any]:
    return assert_markdown_inert(text, MARKERS)


def test_inline_keeps_any_text_whole_in_one_code_span() -> None:
    for text in (HOSTILE, "`", "``a``", " `x` ", "a |b| c", "a\\|b", "  ", "tail`"):
        expected = for_terminal(text, multiline=False)
        (paragraph,) = [t for t in _PARSER.parse(inline(text, 10_000)) if t.type == "inline"]
        assert [(t.type, t.content) for t in paragraph.children] == [("code_inline", expected)]
        row = f"| a |\n| --- |\n| {inline(text, 10_000, cell=True)} |\n"
        cells = [t for t in _walk(_PARSER.parse(row)) if t.type == "code_inline"]
        assert [t.content for t in cells] == [expected]


def test_block_keeps_any_text_whole_in_one_code_block() -> None:
    for text in (HOSTILE, "````\n```", "~~~\n"):
        (fence,) = _PARSER.parse(block(text))
        assert fence.type == "fence" and fence.content == for_terminal(text) + "\n"


def test_html_inline_is_escaped_text() -> None:
    shown = html_inline(HOSTILE, 10_000)
    assert shown.count("<") == 2 and "\n" not in shown
    inner = shown.removeprefix("<code>").removesuffix("</code>")
    assert html.unescape(inner) == for_terminal(HOSTILE, multiline=False)


def _report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "impl.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(
        ["run", "evals.toml", "--impl", "impl:run", "-q", "--no-history",
         "--report", "markdown=out.md"]
    )  # fmt: skip
    assert code == 1
    return (tmp_path / "out.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("source", [IMPL_RAISES, IMPL_KEYS, IMPL_OUTPUT])
def test_the_report_of_a_hostile_implementation_is_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    text = _report(tmp_path, monkeypatch, source)
    assert "lies" in text and "#### Failures (1)" in text
    tokens = _assert_inert(text)
    # what it sent is on the page, whole, as the content of code
    code = [t.content for t in tokens if t.type in ("fence", "code_inline")]
    assert any("<script>alert(1)</script> | x |" in content for content in code)


def test_a_pipe_in_a_table_cell_stays_in_its_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _report(tmp_path, monkeypatch, IMPL_OUTPUT)
    tokens = _walk(_PARSER.parse(text))
    rows: list[list[str]] = []
    for token in tokens:
        if token.type == "tr_open":
            rows.append([])
        elif token.type == "inline" and rows and token.level >= 3:
            rows[-1].append(token.content)
    mismatch = next(row for row in rows if row and row[0] == "`output`")
    assert len(mismatch) == 3
    observed = [t for t in tokens if t.type == "code_inline" and "alert(1)</script>" in t.content]
    assert any(" | x | " in t.content for t in observed)

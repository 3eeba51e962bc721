"""The Markdown report shows what the implementation sent as inert text: no HTML, no
Markdown syntax, no table pipe, no mention and no code fence of its can take effect on
the page (a job summary or a pull request comment)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cer.cli.commands import main
from cer.reports.markdown import block, inline

HOSTILE = (
    "</code></pre><script>alert(1)</script> | x | ![img](https://evil/x.png) "
    "[click](javascript:alert(1)) @octocat #1 **bold** `tick` ~~~\n```\n# heading\x1b[2J\u202e"
)

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "lies"
category = "functional"
input = { x = 1 }
expect = { output = 1 }
"""

IMPL = f"""
def run(x):
    raise ValueError({HOSTILE!r})
"""

IMPL_VALUE = f"""
def run(x):
    return {{{HOSTILE!r}: {HOSTILE!r}}}
"""


def _assert_inert(text: str) -> None:
    # a <pre> block starts its own line and Markdown leaves it unparsed (an HTML block
    # that ends only at </pre>): it holds no tag, so the implementation's text in it
    # cannot end it early; what it says there is plain text
    for found in re.findall(r"^<pre>(.*?)</pre>$", text, re.DOTALL | re.MULTILINE):
        assert "<" not in found and ">" not in found
        assert "\x1b" not in found and "\u202e" not in found
    text = re.sub(r"^<pre>.*?</pre>$", "<pre></pre>", text, flags=re.DOTALL | re.MULTILINE)
    # the only tags are the report's own
    tags = set(re.findall(r"</?([a-zA-Z]+)", text))
    assert tags <= {"code", "pre", "details", "summary"}, tags
    assert "<script" not in text and "javascript:" not in text
    assert "![" not in text and "](" not in text
    assert "@octocat" not in text and "**bold**" not in text and "`tick`" not in text
    assert "```" not in text and "~~~" not in text and "\x1b" not in text
    assert "\u202e" not in text
    for line in text.splitlines():
        assert not line.startswith("# heading")
        if line.startswith("|"):
            # a row has exactly the report's columns: no pipe of the implementation's
            assert line.count("|") - line.count("&#124;") in (4, 5, 6, 7)


def test_inline_and_block_neutralise_everything() -> None:
    shown = inline(HOSTILE, 10_000)
    assert shown.startswith("<code>") and shown.endswith("</code>")
    assert shown.count("<") == 2 and "\n" not in shown
    pre = block(HOSTILE)
    assert pre.count("</pre>") == 1 and "<script" not in pre
    _assert_inert(shown)


@pytest.mark.parametrize("source", [IMPL, IMPL_VALUE])
def test_the_report_of_a_hostile_implementation_is_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "impl.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(
        ["run", "evals.toml", "--impl", "impl:run", "-q", "--no-history",
         "--report", "markdown=out.md"]
    )  # fmt: skip
    assert code == 1
    text = (tmp_path / "out.md").read_text(encoding="utf-8")
    assert "lies" in text and "#### Failures (1)" in text
    _assert_inert(text)

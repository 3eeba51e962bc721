"""The pages of a matrix: ``--report html=`` (one self-contained page) and ``--report
markdown=`` (a pull request comment) for several implementations.

Constructed runs pin down what each page holds: the ranking, what each implementation
is, the filterable rows with a chip per implementation, the detail of each case, known
failures as their own state. One in-process ``cer run`` checks that the two formats
write one page at the path given while the others still write one file per
implementation.
"""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cer.cli.main import main
from cer.model import CaseResult, ImplementationOrigin, RunResult, Status, Suite
from cer.reports import matrix_html, matrix_markdown
from cer.results.matrix import Known, Matrix, build_matrix
from cer.suite.loader import load_suite
from support import Module

P, F, E, S = Status.PASS, Status.FAIL, Status.ERRORED, Status.SKIPPED

SUITE = """commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "one"
category = "functional"
description = "the first"
tags = ["core"]
input = { x = 1 }
expect = { output = 1 }

[[cases]]
name = "two"
category = "functional"
input = { x = 2 }
expect = { output = 2 }

[[adversarial]]
name = "three"
category = "input-validation"
input = { x = "bad" }
expect = { rejects = true }
"""


def _result(name: str, status: Status, output: object = None, **extra: object) -> CaseResult:
    case_class = "adversarial" if name == "three" else "functional"
    category = "input-validation" if name == "three" else "functional"
    observation = {"output": output, "rejects": False, **extra}
    return CaseResult(
        name,
        case_class,
        category,
        status,
        reason=None if status is P else f"{name} went wrong",
        observation=None if status is E else observation,
        stdout="printed by b\n" if status is F else "",
    )


def _run(impl: str, results: list[CaseResult], suite: Suite) -> RunResult:
    positions = {case.name: case.position for case in suite.cases}
    ordered = tuple(replace(r, position=positions[r.case_name]) for r in results)
    return RunResult(f"run-{impl}", "t", f"{impl}@0000000000", 0, 1, ordered, implementation=impl)


@pytest.fixture
def matrix_and_suite(tmp_path: Path) -> tuple[Matrix, Suite]:
    path = tmp_path / "evals.toml"
    path.write_text(SUITE)
    suite = load_suite(path)
    a = _run(
        "a:f",
        [_result("one", P, 1), _result("two", P, 2), _result("three", P, None, rejects=True)],
        suite,
    )
    b = _run(
        "b:f",
        [_result("one", F, 0), _result("two", P, 2), _result("three", F, None)],
        suite,
    )
    b = replace(b, origin=ImplementationOrigin("bee", "2.0", "distribution"))
    c = _run("c:f", [_result("one", P, 1), _result("two", E), _result("three", S)], suite)
    known = [None, {"one": Known("off by one", "https://example.invalid/7")}, None]
    return build_matrix(suite, [a, b, c], ["a", "b", "c"], known=known), suite


class _Tags(HTMLParser):
    """Counts start tags and checks that every non-void element closes."""

    VOID = frozenset({"meta", "input", "br", "hr", "img", "link", "rect"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.seen: dict[str, int] = {}
        self.details: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen[tag] = self.seen.get(tag, 0) + 1
        if tag == "details":
            self.details.append(dict(attrs).get("class") or "")
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen[tag] = self.seen.get(tag, 0) + 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()


def test_the_html_page_of_a_matrix(matrix_and_suite: tuple[Matrix, Suite]) -> None:
    matrix, suite = matrix_and_suite
    page = matrix_html.render(matrix, suite, ["conformant", "nonconformant: 1 known", "x"])
    tags = _Tags()
    tags.feed(page)
    assert tags.open == []
    assert "script" not in tags.seen and "<script" not in page
    assert "default-src 'none'" in page
    rows = [c for c in tags.details if c.startswith("row")]
    assert len(rows) == 3
    one = rows[0].split()
    # filter classes: disagreement, each implementation's state, its array and tag
    assert {"disagree", "c0-pass", "c1-known", "c2-pass"} <= set(one)
    assert "c1-fail" not in one  # a known failure is its own state
    ranking = page[page.index('id="ranking"') : page.index('id="implementations"')]
    assert [m for m in re.findall(r'<td class="mono">([^<]+)</td>', ranking)] == ["a", "c", "b"]
    assert "100.0%" in ranking and "33.3%" in ranking
    assert "bee 2.0" in page and "nonconformant: 1 known" in page
    assert "only what b fails (1)" in page and "only what b knows to fail (1)" in page
    assert "only what c errors on (1)" in page
    assert "#f-1-known:checked ~ .rows > .row:not(.c1-known) { display: none; }" in page
    assert "[[adversarial]] (1)" in page and "tag core (1)" in page
    assert 'class="chip known"' in page
    assert "off by one" in page and "https://example.invalid/7" in page
    assert "the first" in page and "x = 1" in page and "output = 0" in page
    assert "printed by b" in page and "two went wrong" in page


def test_the_markdown_summary_of_a_matrix(matrix_and_suite: tuple[Matrix, Suite]) -> None:
    matrix, suite = matrix_and_suite
    text = matrix_markdown.render(matrix, suite)
    lines = text.splitlines()
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| --")]
    assert table[0].startswith("| # | implementation | version | share passed |")
    assert table[1].startswith("| 1 | `a` |  | 100.0% | 3 | 0 | 0 | 0 | 0 |")
    assert table[2].startswith("| 2 | `c` |  | 33.3% | 1 | 0 | 1 | 1 | 0 |")
    assert table[3].startswith("| 3 | `b` | `bee 2.0` | 33.3% |")
    assert "### Disagreements (3)" in text
    assert "| `one` | ✅ pass | 🔷 known | ✅ pass |" in text


GOOD = "def f(x):\n    return x * 2\n"
BAD = "def f(x):\n    return 0 if x == 3 else x * 2\n"
CASES = """commonsformat_evals = "0.2"
target = "demo"

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
"""


def test_one_page_per_matrix_one_file_per_implementation_otherwise(
    module: Module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    module.suite(CASES)
    good, bad = module.impl(GOOD), module.impl(BAD)
    out = tmp_path / "out"
    code = main(
        [
            "run",
            str(module.root / "evals.toml"),
            "--impl",
            f"good={good}:f",
            "--impl",
            f"bad={bad}:f",
            "--no-history",
            "-q",
            "--report",
            f"html={out / 'matrix.html'}",
            "--report",
            f"markdown={out / 'matrix.md'}",
            "--report",
            f"junit={out / 'junit.xml'}",
        ]
    )
    assert code == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "junit.bad.xml",
        "junit.good.xml",
        "matrix.html",
        "matrix.md",
    ]
    assert "only what bad fails (1)" in (out / "matrix.html").read_text()
    assert "`bad`" in (out / "matrix.md").read_text()


def test_a_large_matrix_lists_the_cases_passed_alike_by_name(
    matrix_and_suite: tuple[Matrix, Suite], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past FULL_CELLS cells, a case every implementation passed with the same
    observation is one line; a disagreement and every failure stay whole."""
    _, suite = matrix_and_suite
    runs = [
        _run(impl, [_result("one", P, 1), _result("two", P, 2), _result("three", status)], suite)
        for impl, status in (("a:f", P), ("b:f", F))
    ]
    matrix = build_matrix(suite, runs, ["a", "b"])
    monkeypatch.setattr(matrix_html, "FULL_CELLS", 5)
    page = matrix_html.render(matrix, suite)
    tags = _Tags()
    tags.feed(page)
    assert tags.open == []
    assert [c.split()[0] for c in tags.details if c.startswith("row")] == ["row"]
    assert page.count('<div class="row ') == 2
    assert "two went wrong" not in page and "three went wrong" in page
    assert "listed by name" in page
    monkeypatch.setattr(matrix_html, "FULL_CELLS", 6)
    whole = matrix_html.render(matrix, suite)
    assert '<div class="row ' not in whole and "listed by name" not in whole

"""The HTML report: its structure, its escaping of everything the implementation says,
its independence from the network, and its optional dependency.

Pages are read back with the standard library's ``html.parser``; where a headless
Chromium is installed, one test also lets a real browser parse and draw a page.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import support
from cer.cli.main import main
from cer.constraints import suite_coverage
from cer.history.database import History, default_history_path
from cer.model import CaseResult, Mismatch, RunConditions, RunResult, Status
from cer.reports import FORMATS, ReportContext, parse_report_spec, render_report, write_report
from cer.reports.html import INSTALL_HINT, page_model, visible
from cer.suite.loader import load_suite
from support import Module

DATA = support.DATA

# --- reading a page back ----------------------------------------------------------------


@dataclass(eq=False)
class Element:
    tag: str
    attrs: dict[str, str]
    classes: frozenset[str]
    parents: tuple[str, ...]
    """Tags (with their classes, ``tag.class``) of the enclosing elements, outermost first."""
    text: list[str] = field(default_factory=list)
    """Its own text, without that of the elements inside it."""
    start: int = 0
    end: int = -1
    """Where its whole text starts and ends in the page's text chunks."""


VOID = {"meta", "link", "br", "hr", "img", "input", "source", "rect", "line", "polyline"}


class Page(HTMLParser):
    """Every element with its attributes, enclosing elements and own text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.stack: list[Element] = []
        self.data: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        classes = frozenset(values.get("class", "").split())
        parents = tuple(e.tag + "".join("." + c for c in sorted(e.classes)) for e in self.stack)
        element = Element(tag, values, classes, parents, start=len(self.data))
        self.elements.append(element)
        if tag in VOID:
            element.end = element.start
        else:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1].tag == tag:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index].tag == tag:
                for closed in self.stack[index:]:
                    closed.end = len(self.data)
                del self.stack[index:]
                return

    def handle_data(self, data: str) -> None:
        self.data.append(data)
        if self.stack:
            self.stack[-1].text.append(data)

    def find(self, tag: str, cls: str | None = None) -> list[Element]:
        return [e for e in self.elements if e.tag == tag and (cls is None or cls in e.classes)]

    def within(self, element: Element) -> list[Element]:
        """The elements after ``element`` whose parents include it (by position)."""
        start = next(i for i, e in enumerate(self.elements) if e is element)
        depth = len(element.parents)
        found = []
        for other in self.elements[start + 1 :]:
            if len(other.parents) <= depth:
                break
            found.append(other)
        return found

    def text_in(self, element: Element) -> str:
        """The text of ``element`` and every element inside it (markup dropped)."""
        end = element.end if element.end >= 0 else len(self.data)
        return "".join(self.data[element.start : end])

    @property
    def text(self) -> str:
        return "".join(self.data)


def assert_self_contained(text: str) -> None:
    """Nothing the page would fetch: no external src/href, no @import, no url()."""
    page = Page(text)
    for element in page.elements:
        assert element.tag not in ("script", "iframe", "object", "embed", "link", "img")
        for name, value in element.attrs.items():
            assert not name.startswith("on"), (element.tag, name)
            if name in ("src", "href", "xlink:href", "action", "srcset", "poster"):
                assert value.startswith("#"), (element.tag, name, value)
    styles = "".join("".join(e.text) for e in page.find("style"))
    assert "@import" not in styles
    assert "url(" not in styles
    policy = [
        e for e in page.find("meta") if e.attrs.get("http-equiv") == "Content-Security-Policy"
    ]
    assert policy and "default-src 'none'" in policy[0].attrs["content"]


# --- runs to render ---------------------------------------------------------------------

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "passes"
category = "functional"
tags = ["upstream-section:Tabs", "smoke"]
input = { x = 2 }
expect = { output = "4" }
verifies = ["doubles"]

[[cases]]
name = "fails"
category = "functional"
tags = ["upstream-section:Tabs"]
input = { x = 3 }
expect = { output = "line one\\nline 7\\nline three\\n" }
verifies = ["doubles"]

[[cases]]
name = "crashes"
category = "input-validation"
tags = ["upstream-section:Links"]
input = { x = 4 }
expect = { output = "8" }

[[adversarial]]
name = "hostile"
category = "input-validation"
tags = ["upstream-section:Links"]
input = { x = 5 }
expect = { output = "10" }
"""

IMPL = r"""
import sys

def f(x):
    if x == 3:
        print("a line on stdout")
        return "line one\nline 6\nline three\n"
    if x == 4:
        raise RuntimeError("boom")
    if x == 5:
        print("\x1b[31m<script>alert(1)</script>\x1b[0m")
        print('"><img src=x onerror=alert(2)>', file=sys.stderr)
        return '<script>alert(3)</script>"><img src=x onerror=alert(4)>'
    return str(x * 2)
"""

MODULE_DOC = """
<constraints>
- doubles: the output is twice the input.
- never-negative: the output is never negative.
</constraints>
"""


@pytest.fixture
def real(module: Module) -> ReportContext:
    """A real run: one pass, one fail (a string diff), one errored, one hostile fail."""
    module.suite(SUITE)
    (module.root / "commonsformat.md").write_text(MODULE_DOC, encoding="utf-8")
    impl = module.impl(IMPL)
    suite = load_suite(module.root / "evals.toml")
    run = module.run(f"{impl}:f")
    assert [r.status for r in run.results] == [
        Status.PASS,
        Status.FAIL,
        Status.ERRORED,
        Status.FAIL,
    ]
    with History.open(module.root / "h.sqlite") as history:
        history.record(run, suite)
        records = history.runs(None)
        flaky = history.flaky_names(run.implementation_id, run.suite_hash)
    return ReportContext(run, suite, suite_coverage(suite, run), flaky, records)


def test_the_page_shows_verdict_counts_groups_chart_and_failures(real: ReportContext) -> None:
    text = render_report("html", real)
    assert text.startswith("<!DOCTYPE html>")
    page = Page(text)
    header = page.find("header")[0]
    assert "v-nonconformant" in header.classes
    assert "".join(page.find("span", "badge")[0].text) == "nonconformant"
    tile_text = [page.text_in(t) for t in page.find("div", "tile")]
    assert tile_text[:5] == ["4cases", "1passed", "2failed", "1errored", "0skipped"]
    # One bar per group: case class (2), category (2), upstream-section (2), the bare tag.
    groups = page.find("table", "groups")
    assert len(groups) == 4
    rows = [[r for r in page.within(t) if r.tag == "tr"] for t in groups]
    assert [len(r) for r in rows] == [2, 2, 2, 1]
    titles = ["".join(h.text) for h in page.find("h3")]
    assert titles[:4] == ["case class", "category", "tag upstream-section:", "tag"]
    bars = [e for t in groups for e in page.within(t) if e.tag == "svg"]
    assert len(bars) == 7
    tabs = [e for e in page.within(groups[2]) if e.tag == "td" and e.text == ["Tabs"]]
    assert tabs
    # The chart: an SVG with one column per recorded run.
    chart = page.find("svg", "chart")
    assert len(chart) == 1
    assert len([e for e in page.within(chart[0]) if e.tag == "g" and "run" in e.classes]) == 1
    # One collapsible block per failed or errored case, the first one open.
    details = page.find("details", "case")
    assert len(details) == 3
    assert "open" in details[0].attrs and "open" not in details[1].attrs
    assert [sorted(d.classes - {"case"}) for d in details] == [["fail"], ["errored"], ["fail"]]
    # The diff of the string mismatch, line by line.
    diff = [e for e in page.within(details[0]) if e.tag == "span" and e.classes & {"add", "del"}]
    assert [("".join(e.text), sorted(e.classes)) for e in diff] == [
        ("-line 7", ["del"]),
        ("+line 6", ["add"]),
    ]
    # Captured output and the traceback, under labels.
    assert "a line on stdout" in page.text_in(details[0])
    assert "RuntimeError: boom" in page.text_in(details[1])
    # Coverage K of N and the needs-a-case list.
    coverage = page.find("section")[3]
    assert coverage.attrs["id"] == "coverage"
    covered = page.text_in(coverage)
    assert "1 of 2 constraints covered" in covered
    assert "never-negative: the output is never negative." in covered
    # Run conditions.
    assert "implementation id" in page.text and real.run.implementation_id in page.text
    assert_self_contained(text)


def test_implementation_text_stays_text(real: ReportContext) -> None:
    text = render_report("html", real)
    page = Page(text)
    assert not page.find("script")
    assert not page.find("img")
    for element in page.elements:
        assert not any(name.startswith("on") for name in element.attrs)
    assert "<script>alert(1)</script>" in page.text
    assert '"><img src=x onerror=alert(2)>' in page.text
    assert "<script>alert(3)</script>" in page.text
    # The terminal escapes are shown, not passed on.
    assert "\x1b" not in text
    assert "\\x1b[31m" in page.text
    assert_self_contained(text)


def hostile_context() -> ReportContext:
    """Hand-made results with everything a page must survive: markup, lone surrogates,
    control characters, a bidirectional override, in names, reasons, output and values."""
    suite = load_suite(DATA / "greet" / "evals.toml")
    nasty = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\udc80\x1b[2J\x00\u202e'
    results = (
        CaseResult(
            "name " + nasty,
            "functional",
            "cat " + nasty,
            Status.FAIL,
            "reason " + nasty,
            stdout="out " + nasty,
            stderr="err " + nasty,
            traceback="tb " + nasty,
            mismatches=(
                Mismatch("output", "msg " + nasty, "expected", "observed " + nasty),
                Mismatch("tree", "msg", {"a": 1}, ["x", nasty]),
            ),
        ),
        CaseResult("errs", "adversarial", "input-validation", Status.ERRORED, nasty),
    )
    run = RunResult(
        "run" + nasty,
        "greet" + nasty,
        "impl" + nasty,
        0,
        1,
        results,
        implementation="impl" + nasty,
        notes=("note " + nasty,),
    )
    return ReportContext(run, suite, None, frozenset({"name " + nasty}))


def test_surrogates_controls_and_markup_anywhere_are_escaped(tmp_path: Path) -> None:
    text = render_report("html", hostile_context())
    target = tmp_path / "r.html"
    write_report(text, target)  # encodable: no lone surrogate reaches the file
    assert target.read_text(encoding="utf-8") == text
    page = Page(text)
    assert not page.find("script") and not page.find("img")
    for element in page.elements:
        assert not any(name.startswith("on") for name in element.attrs)
    for raw in ("\udc80", "\x1b", "\x00", "\u202e"):
        assert raw not in text
    for shown in ("\\udc80", "\\x1b[2J", "\\x00", "\\u202e"):
        assert shown in page.text
    assert page.text.count("<script>alert(1)</script>") >= 8
    assert len(page.find("details", "case")) == 2
    assert_self_contained(text)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain <b> & text\n\ttabbed", "plain <b> & text\n\ttabbed"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("a\x00b\x7fc\x85d", "a\\x00b\\x7fc\\x85d"),
        ("cr\r\nlf\rlone", "cr\r\nlf\\x0dlone"),
        ("\ud800 \udfff", "\\ud800 \\udfff"),
        ("rtl\u202eoverride\u2066", "rtl\\u202eoverride\\u2066"),
        ("é 漢字 🎉", "é 漢字 🎉"),
    ],
)
def test_visible(raw: str, shown: str) -> None:
    assert visible(raw) == shown


def test_a_run_without_history_coverage_or_failures() -> None:
    suite = load_suite(DATA / "greet" / "evals.toml")
    results = tuple(
        CaseResult(c.name, c.case_class, c.category, Status.PASS, position=c.position)
        for c in suite.cases
    )
    run = RunResult("r", "greet", "greet:greet@abc", 0, 1500, results)
    text = render_report("html", ReportContext(run, suite))
    page = Page(text)
    assert "v-conformant" in page.find("header")[0].classes
    assert not page.find("details", "case")
    assert not page.find("svg", "chart")
    assert "No recorded runs" in page.text
    assert "No case failed or errored." in page.text
    assert "not recorded (a run from before cer recorded them)" in page.text
    assert_self_contained(text)


def test_the_chart_has_a_column_per_recorded_run_and_marks_this_one(module: Module) -> None:
    module.suite(SUITE)
    impl = module.impl(IMPL)
    suite = load_suite(module.root / "evals.toml")
    with History.open(module.root / "h.sqlite") as history:
        for _ in range(3):
            run = module.run(f"{impl}:f")
            history.record(run, suite)
        records = history.runs(None)
    model = page_model(ReportContext(run, suite, None, None, records))
    assert model.chart is not None
    assert [c.current for c in model.chart.columns] == [False, False, True]
    assert all(
        [status for status, _, _ in c.rects] == ["pass", "fail", "errored"]
        for c in model.chart.columns
    )
    assert model.chart.pass_line.count(",") == 3
    page = Page(render_report("html", ReportContext(run, suite, None, None, records)))
    chart = page.find("svg", "chart")[0]
    assert len([e for e in page.within(chart) if e.tag == "g" and "run" in e.classes]) == 3
    assert len([e for e in page.within(chart) if "current" in e.classes]) == 1


# --- the optional dependency ------------------------------------------------------------


def test_without_jinja2_the_html_report_is_a_usage_error_before_anything_runs(
    module: Module, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(SUITE)
    marker = module.root / "imported"
    impl = module.impl(f"open({str(marker)!r}, 'w').close()\n" + IMPL)
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 raises ImportError
    suite = str(module.root / "evals.toml")
    with pytest.raises(SystemExit) as exit_:
        main(["run", suite, "--impl", f"{impl}:f", "--report", "html=r.html"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Jinja2" in err and INSTALL_HINT in err
    assert not marker.exists()
    assert not (module.root / ".cer").exists()
    # The other formats do not need it.
    assert parse_report_spec("junit").format == "junit"
    code = main(["run", suite, "--impl", f"{impl}:f", "-q", "--report", f"tap={module.root}/r.tap"])
    assert code == 1
    assert (module.root / "r.tap").is_file()


def test_the_template_ships_inside_the_package() -> None:
    from importlib.resources import files

    template = files("cer.reports") / "templates" / "report.html.j2"
    assert template.is_file()
    assert FORMATS["html"].default_path == "cer-report.html"


# --- a real browser, where there is one -------------------------------------------------

CHROMIUM = next(
    (p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None
)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium on this machine")
def test_a_browser_parses_and_draws_the_page(real: ReportContext, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    write_report(render_report("html", real), target)
    common: list[Any] = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*common, "--dump-dom", target.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    page = Page(dom)
    assert len(page.find("details", "case")) == 3
    assert not page.find("script") and not page.find("img")
    assert len(page.find("svg", "chart")) == 1
    png = tmp_path / "report.png"
    subprocess.run(
        [*common, "--window-size=1200,1600", f"--screenshot={png}", target.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000


# --- from the command line ----------------------------------------------------------------


def load_run_conditions(suite: Path) -> RunConditions:
    """The conditions of the newest run recorded beside ``suite``."""
    with History.open(default_history_path(suite), create=False) as history:
        newest = history.latest_run(suite_path=suite)
        assert newest is not None
        conditions = history.load_run(newest.run_id).conditions
    assert conditions is not None
    return conditions


def _chart_columns(path: Path) -> int:
    page = Page(path.read_text(encoding="utf-8"))
    charts = page.find("svg", "chart")
    if not charts:
        return 0
    return len([e for e in page.within(charts[0]) if e.tag == "g" and "run" in e.classes])


def test_cer_run_charts_the_recorded_runs(module: Module) -> None:
    module.suite(SUITE)
    impl = module.impl(IMPL)
    suite = str(module.root / "evals.toml")
    report = module.root / "out" / "report.html"
    for _ in range(2):
        code = main(["run", suite, "--impl", f"{impl}:f", "-q", "--report", f"html={report}"])
        assert code == 1
    assert _chart_columns(report) == 2
    page = Page(report.read_text(encoding="utf-8"))
    assert len(page.find("details", "case")) == 3
    # The conditions the run recorded.
    terms = [page.text_in(e) for e in page.find("dt")]
    values = dict(zip(terms, [page.text_in(e) for e in page.find("dd")], strict=True))
    conditions = load_run_conditions(module.root / "evals.toml")
    assert values["implementation"] == f"{impl}:f"
    assert values["isolation"] == conditions.isolation == "fork"
    assert values["sandbox"] == conditions.sandbox
    assert values["network"] == conditions.network
    assert values["timeout per case"] == "10 s"
    assert values["workers"] == str(conditions.jobs)
    assert values["python version"] == conditions.python_version
    main(["run", suite, "--impl", f"{impl}:f", "-q", "--no-history", "--report", f"html={report}"])
    assert _chart_columns(report) == 0
    assert "No recorded runs" in report.read_text(encoding="utf-8")


def test_cer_history_html_renders_the_newest_recorded_run(
    module: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(SUITE)
    (module.root / "commonsformat.md").write_text(MODULE_DOC, encoding="utf-8")
    impl = module.impl(IMPL)
    suite = module.root / "evals.toml"
    for _ in range(3):
        main(["run", str(suite), "--impl", f"{impl}:f", "-q"])
    capsys.readouterr()
    page_path = module.root / "history.html"
    assert main(["history", "--suite", str(suite), "--html", str(page_path)]) == 0
    assert "3 recorded runs charted" in capsys.readouterr().out
    assert _chart_columns(page_path) == 3
    text = page_path.read_text(encoding="utf-8")
    page = Page(text)
    assert len(page.find("details", "case")) == 3
    assert "1 of 2 constraints covered" in page.text_in(page.find("section")[3])
    assert [page.text_in(h) for h in page.find("h3")][:3] == [
        "case class",
        "category",
        "tag upstream-section:",
    ]
    assert "<script>alert(1)</script>" in page.text and not page.find("script")
    assert_self_contained(text)
    terms = [page.text_in(e) for e in page.find("dt")]
    values = dict(zip(terms, [page.text_in(e) for e in page.find("dd")], strict=True))
    assert values["sandbox"] == load_run_conditions(suite).sandbox
    # -n limits the chart; the page still shows the newest run.
    assert main(["history", "--suite", str(suite), "--html", str(page_path), "-n", "2"]) == 0
    assert _chart_columns(page_path) == 2
    # A suite changed since the run: a warning, and a page without tags or coverage.
    suite.write_text(suite.read_text() + "\n# edited\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["history", "--suite", str(suite), "--html", str(page_path)]) == 0
    assert "changed since the run" in capsys.readouterr().err
    page = Page(page_path.read_text(encoding="utf-8"))
    assert len(page.find("details", "case")) == 3
    assert not [e for e in page.find("section") if e.attrs.get("id") == "coverage"]
    assert "tag upstream-section:" not in [page.text_in(h) for h in page.find("h3")]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--case", "fails"], "cannot be combined"),
        (["--format", "json"], "cannot be combined"),
    ],
)
def test_cer_history_html_usage_errors(
    module: Module, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    suite = module.suite(SUITE)
    code = main(["history", "--suite", str(suite), "--html", str(module.root / "h.html"), *extra])
    assert code == 2
    assert message in capsys.readouterr().err


def test_cer_history_html_needs_a_recorded_run_and_jinja2(
    module: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = module.suite(SUITE)
    target = module.root / "h.html"
    assert main(["history", "--suite", str(suite), "--html", str(target)]) == 2
    assert "no history" in capsys.readouterr().err
    impl = module.impl(IMPL)
    main(["run", str(suite), "--impl", f"{impl}:f", "-q"])
    monkeypatch.setitem(sys.modules, "jinja2", None)
    capsys.readouterr()
    assert main(["history", "--suite", str(suite), "--html", str(target)]) == 2
    assert INSTALL_HINT in capsys.readouterr().err
    assert not target.exists()


def test_huge_failures_are_cut_but_every_one_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    from cer.reports import html

    monkeypatch.setattr(html, "DETAILED_FAILURES", 2)
    suite = load_suite(DATA / "greet" / "evals.toml")
    results = tuple(
        CaseResult(
            f"case-{n}",
            "functional",
            "functional",
            Status.FAIL,
            "r" * (html.TEXT_LIMIT + 5),
            stdout=f"output of {n}",
            mismatches=(Mismatch("output", "m", "a", "b"),),
        )
        for n in range(4)
    )
    run = RunResult("r", "greet", "greet:greet@abc", 0, 1, results)
    model = page_model(ReportContext(run, suite))
    assert [f.detailed for f in model.failures] == [True, True, False, False]
    assert [len(f.streams) for f in model.failures] == [1, 1, 0, 0]
    assert model.failures[0].reason.endswith("5 more characters (the json report has all)")
    page = Page(render_report("html", ReportContext(run, suite)))
    assert len(page.find("details", "case")) == 4
    assert "output of 1" in page.text and "output of 2" not in page.text
    assert "shown for the first 2 failures" in page.text


def test_a_large_run_lists_its_passes_by_name_and_its_failures_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past FULL_PASSES cases, a pass is one line (its name, escaped as every name is)
    that the status and group picks still narrow; failures, errors and skips keep
    their whole row; a run of 20,000 cases then makes a page of a few megabytes."""
    from cer.reports import html

    monkeypatch.setattr(html, "FULL_PASSES", 3)
    suite = load_suite(DATA / "greet" / "evals.toml")
    nasty = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\udc80\x1b[2J'
    results = (
        CaseResult("pass " + nasty, "functional", "cat", Status.PASS),
        CaseResult("pass-2", "functional", "cat", Status.PASS),
        CaseResult("broken", "functional", "cat", Status.FAIL, "wrong " + nasty),
        CaseResult("crashes", "adversarial", "other", Status.ERRORED, "boom"),
        CaseResult("skips", "functional", "cat", Status.SKIPPED, "deselected"),
    )
    run = RunResult("r", "greet", "greet:greet@abc", 0, 1, results)
    text = render_report("html", ReportContext(run, suite))
    page = Page(text)
    brief = page.find("div", "b")
    assert [" ".join(e.text) for e in brief] == ["pass " + visible(nasty), "pass-2"]
    assert all({"row", "pass", "g1", "g2"} <= e.classes for e in brief)
    whole = page.find("details", "row")
    assert [sorted(e.classes & {"fail", "errored", "skipped"}) for e in whole] == [
        ["fail"],
        ["errored"],
        ["skipped"],
    ]
    assert "passes are listed by name" in page.text
    assert not page.find("script") and not page.find("img")
    assert "\\udc80" in page.text and "\udc80" not in text
    assert "#st-fail:checked ~ .rows > .row:not(.fail)" in text
    assert_self_contained(text)
    # Small runs still show each pass's values.
    monkeypatch.setattr(html, "FULL_PASSES", 5)
    page = Page(render_report("html", ReportContext(run, suite)))
    assert not page.find("div", "b") and len(page.find("details", "row")) == 5
    assert "passes are listed by name" not in page.text

"""The extension points of docs/architecture.md ("Where a new X goes") followed together,
as the page says, and seen through ``cer run`` itself: a kind is one entry in
:data:`cer.engine.kinds.KINDS` and its backend, an operator one entry in
:data:`cer.judge.compare.OPERATORS` and its function, a report format one entry in
:data:`cer.reports.FORMATS` and its renderer, and nothing else in cer is told of them.
Each one's own worked example is named on that page (tests/tui/test_panes.py is the
TUI pane's), and this one takes its toys from them: the kind of tests/engine/test_kinds.py,
whose backend replays recorded observations in this process (so no worker starts),
and the ``_endswith`` operator of tests/judge/test_operators.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import support
from cer.cli.exits import ExitCode
from cer.cli.main import main
from cer.engine import kinds
from cer.judge import compare
from cer.judge.compare import Operator
from cer.reports import FORMATS, ReportContext, ReportFormat
from engine.test_kinds import REPLAY
from judge.test_operators import _ends_with

DOCS = support.ROOT / "docs"

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "doubles"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "triples"
category = "functional"
input = { x = 3 }
expect = { output = 9 }

[[cases]]
name = "shouts"
category = "functional"
input = { text = "hi" }
expect = { output_endswith = "!" }
"""


def _render_toy(context: ReportContext) -> str:
    """One line a case: what the run reported, never judged again."""
    return "".join(f"{r.case_name} {r.status.value}\n" for r in context.run.results)


TOY = ReportFormat("toy", "one line a case", "cer-toy.txt", _render_toy)


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    return tmp_path / "evals.toml"


def _recording(folder: Path, shouts: str) -> Path:
    recording = folder / "observed.json"
    recording.write_text(
        json.dumps({"doubles": {"output": 4}, "triples": {"output": 6}, "shouts": shouts}),
        encoding="utf-8",
    )
    return recording


def test_a_kind_an_operator_and_a_report_format_each_added_to_their_table_reach_cer_run(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(kinds.KINDS, "replay", REPLAY)  # type: ignore[index]
    monkeypatch.setitem(compare.OPERATORS, "_endswith", Operator("_endswith", True, _ends_with))
    monkeypatch.setitem(FORMATS, "toy", TOY)
    recording = _recording(suite.parent, "hi!")
    report = suite.parent / "out" / "toy.txt"
    code = main(
        [
            "run",
            str(suite),
            "--impl-replay",
            str(recording),
            "--no-history",
            "--report",
            f"toy={report}",
        ]
    )
    out = capsys.readouterr().out
    assert code == ExitCode.FAILED, out
    # The operator judged "shouts"; the kind's backend ran every case; the format wrote
    # what the run reported, and a false observation ("triples") still fails.
    assert report.read_text(encoding="utf-8") == "doubles pass\ntriples fail\nshouts pass\n"


def test_the_toy_operator_fails_what_it_does_not_match_and_without_it_the_key_is_literal(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(kinds.KINDS, "replay", REPLAY)  # type: ignore[index]
    monkeypatch.setitem(FORMATS, "toy", TOY)
    recording = _recording(suite.parent, "hi!")
    args = ["run", str(suite), "--impl-replay", str(recording), "--no-history", "-k", "shouts"]
    # Without the entry, output_endswith is a literal value: "hi!" is bound to it and
    # compared strictly, which is never a pass.
    assert main([*args, "--report", "toy=literal.txt"]) == ExitCode.FAILED
    deselected = "doubles skipped\ntriples skipped\n"
    assert Path("literal.txt").read_text(encoding="utf-8") == deselected + "shouts fail\n"
    monkeypatch.setitem(compare.OPERATORS, "_endswith", Operator("_endswith", True, _ends_with))
    _recording(suite.parent, "hi")
    assert main([*args, "--report", "toy=missed.txt"]) == ExitCode.FAILED
    assert Path("missed.txt").read_text(encoding="utf-8") == deselected + "shouts fail\n"
    assert "expected output to end with '!'" in capsys.readouterr().out


def test_the_reports_page_lists_exactly_the_formats_of_the_table() -> None:
    page = (DOCS / "reports.md").read_text(encoding="utf-8")
    table = page.split("| format ", 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"^\| `(\w+)` +\|", table, flags=re.MULTILINE)
    assert sorted(listed) == sorted(FORMATS)

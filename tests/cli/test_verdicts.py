"""Every surface states one verdict: for a run with known failures and no regressions,
one with a regression, one with a stale baseline entry, one whose cases all pass with
part of the module's constraints covered (``passed``, never ``conformant``) and one
shard of two, the summary line, the JSON results (their ``summary.verdict`` too), the
JSON-lines trailer, the manifest, the HTML (its badge too), Markdown, JUnit, TAP and
GitHub reports, the history, ``cer history`` (text, JSON and HTML) and ``cer diff`` all
say the same sentence, and the exit code goes with its word."""

from __future__ import annotations

import html
import json
import re
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cer.cli.exits import ExitCode
from cer.cli.main import main
from cer.reports import FORMATS, parse_report_spec
from cer.results.conformance import word_of

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "adds"
category = "functional"
verifies = ["adds-numbers"]
input = { op = "ok" }
expect = { output = 1 }

[[cases]]
name = "tabs-expand"
category = "functional"
input = { op = "fail" }
expect = { output = 1 }

[[cases]]
name = "tabs-keep"
category = "functional"
input = { op = "fail" }
expect = { output = 1 }

[[cases]]
name = "crashes"
category = "functional"
input = { op = "raise" }
expect = { output = 1 }
"""

MODULE_DOC = """# demo

<constraints>
- adds-numbers: it adds
- expands-tabs: it expands tabs
- never-crashes: it never crashes
</constraints>
"""

SLOPPY = """
def run(op):
    if op == "raise":
        raise RuntimeError("boom")
    return 1 if op == "ok" else 2
"""

GOOD = """
def run(op):
    return 1
"""

TABS = """
[[known]]
case = "tabs-*"
status = "fail"
reason = "tabs are not expanded yet"
"""

CRASHES = """
[[known]]
case = "crashes"
status = "errored"
reason = "raises on purpose"
"""

STALE = """
[[known]]
case = "adds"
status = "fail"
reason = "was broken once"
"""

COVERED = "coverage incomplete: 2 of 3 constraints without a case, 2 need repair"

SCENARIOS = {
    "known failures, no regressions": (
        "sloppy",
        TABS + CRASHES,
        ExitCode.OK,
        f"nonconformant: 3 known failures, no regressions, {COVERED}",
    ),
    "a regression": (
        "sloppy",
        TABS,
        ExitCode.FAILED,
        f"nonconformant: 2 known failures, 1 regression, {COVERED}",
    ),
    "a stale entry": (
        "sloppy",
        TABS + CRASHES + STALE,
        ExitCode.FAILED,
        f"nonconformant: 3 known failures, no regressions, 1 stale baseline entry, {COVERED}",
    ),
    "every case passed, partial coverage": ("good", None, ExitCode.OK, f"passed, {COVERED}"),
    "one shard of two": (
        "good",
        None,
        ExitCode.OK,
        f"shard 1/2: passed, 2 of 4 cases; cer merge of every shard gives the run's verdict, "
        f"{COVERED}",
    ),
}
EXTRA = {"one shard of two": ["--shard", "1/2"]}


def _cer(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out


def _html_statement(page: str) -> str:
    found = re.search(r'<span class="statement">(.*?)</span>', page, re.S)
    assert found is not None
    return html.unescape(found.group(1))


def _html_badge(page: str) -> str:
    found = re.search(
        r'<header class="top v-([a-z]+)">.*?<span class="badge">(.*?)</span>', page, re.S
    )
    assert found is not None and found.group(1) == found.group(2)
    return found.group(2)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_surface_states_the_same_verdict(
    scenario: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    impl, known, exit_code, sentence = SCENARIOS[scenario]
    word = word_of(sentence, "")
    assert word in ("passed", "nonconformant")
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "commonsformat.md").write_text(MODULE_DOC, encoding="utf-8")
    (tmp_path / "sloppy.py").write_text(SLOPPY, encoding="utf-8")
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    baseline = []
    if known is not None:
        (tmp_path / "known.toml").write_text(textwrap.dedent(known), encoding="utf-8")
        baseline = ["--baseline", "known.toml"]
    # every format of the table that writes a file (github writes to standard output)
    reports = {
        name: tmp_path / f"report.{name}"
        for name in FORMATS
        if not parse_report_spec(name).to_stdout
    }
    # a first run, so that cer diff has one to compare the run with
    assert _cer(capsys, "run", "evals.toml", "--impl", "good:run", "-q")[0] == ExitCode.OK
    code, out = _cer(
        capsys,
        "run",
        "evals.toml",
        "--impl",
        f"{impl}:run",
        "-q",
        *baseline,
        "--format",
        "jsonl",
        "--output",
        "lines.jsonl",
        *(f"--report={name}={path}" for name, path in reports.items()),
        "--report=github",
        *EXTRA.get(scenario, []),
    )
    assert code == exit_code
    said: dict[str, str] = {}
    lines = out.splitlines()
    summary_line = next(line for line in lines if line.startswith("4 cases: "))
    said["summary line"] = summary_line.split(" — ", 1)[1].split(" · sandbox: ")[0]
    notice = next(line for line in lines if line.startswith("::notice"))
    said["github"] = notice.rsplit(" — ", 1)[1]

    document = json.loads(reports["json"].read_text(encoding="utf-8"))
    assert document["summary"]["verdict"] == word
    assert document["conformance"]["verdict"] == word
    said["json"] = document["conformance"]["statement"]
    trailer = json.loads(Path("lines.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert trailer["type"] == "trailer" and trailer["summary"]["verdict"] == word
    said["json lines"] = trailer["conformance"]["statement"]
    said["manifest"] = json.loads(reports["manifest"].read_text(encoding="utf-8"))["conformance"]
    page = reports["html"].read_text(encoding="utf-8")
    said["html"] = _html_statement(page)
    assert _html_badge(page) == word
    markdown = reports["markdown"].read_text(encoding="utf-8")
    bold = next(line for line in markdown.splitlines() if line.startswith("**"))
    said["markdown"] = bold.removeprefix("**").removesuffix("**")
    junit = ET.parse(reports["junit"]).getroot()
    stated = {p.get("value") for p in junit.iter("property") if p.get("name") == "verdict"}
    assert len(stated) == 1
    said["junit"] = stated.pop() or ""
    tap = reports["tap"].read_text(encoding="utf-8").splitlines()[-1]
    said["tap"] = tap.rsplit(" — ", 1)[1]

    code, out = _cer(capsys, "history", "-n", "1")
    header, newest = out.splitlines()[:2]
    # a run that left cases out is marked after its verdict, apart from it
    said["cer history"] = newest[header.index("verdict") :].removesuffix(" · partial run")
    code, out = _cer(capsys, "history", "-n", "1", "--format", "json")
    (recorded,) = json.loads(out)["runs"]
    assert recorded["summary"]["verdict"] == word
    said["cer history --format json"] = recorded["conformance"]
    assert recorded["baseline"] == (None if known is None else "known.toml")
    assert _cer(capsys, "history", "--html", "history.html")[0] == ExitCode.OK
    recorded_page = Path("history.html").read_text(encoding="utf-8")
    said["cer history --html"] = _html_statement(recorded_page)
    assert _html_badge(recorded_page) == word
    code, out = _cer(capsys, "diff")
    to_line = next(line for line in out.splitlines() if line.startswith("  to "))
    said["cer diff"] = (
        to_line.split(", ", 2)[2]
        .removesuffix(")")
        .removesuffix(", partial run: the cases it did not run are skipped in it")
    )

    assert set(FORMATS) <= set(said), "a report format whose statement is not read here"
    assert said == dict.fromkeys(said, sentence)

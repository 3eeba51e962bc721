"""The command line around history and reports: record, list, diff, rerun, report."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import cer.cli.run as cli
from cer.cli.main import main
from support import Module

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "doubles-two"
category = "functional"
input = { x = 2 }
expect = { output = 4 }
verifies = ["doubles"]

[[cases]]
name = "doubles-three"
category = "functional"
input = { x = 3 }
expect = { output = 6 }
verifies = ["doubles"]

[[cases]]
name = "doubles-four"
category = "functional"
input = { x = 4 }
expect = { output = 8 }
verifies = ["dobules"]
"""

GOOD = "def f(x):\n    return x * 2\n"
BAD_ON_THREE = "def f(x):\n    return 0 if x == 3 else x * 2\n"
# Passes and fails in turn, with the same source: the same implementation id.
WOBBLY = """
from pathlib import Path

def f(x):
    if x != 3:
        return x * 2
    flag = Path(__file__).with_name("wobble.flag")
    flipped = not flag.exists()
    if flipped:
        flag.write_text("")
    else:
        flag.unlink()
    return 6 if flipped else 0
"""

DOC = "<constraints>\n- doubles: twice the input.\n- never-negative: not below 0.\n</constraints>\n"

VERDICT = (
    "nonconformant, coverage incomplete: 1 of 2 constraints without a case, 1 needs repair, "
    "1 unknown constraint in verifies"
)


@pytest.fixture
def project(module: Module, monkeypatch: pytest.MonkeyPatch) -> Module:
    module.suite(SUITE)
    (module.root / "commonsformat.md").write_text(DOC, encoding="utf-8")
    monkeypatch.chdir(module.root)
    return module


def cer(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], impl: str, *args: str) -> tuple[int, Any]:
    code, out, err = cer(
        capsys,
        "run",
        "evals.toml",
        "--impl",
        f"{impl}:f",
        "--timeout",
        "5",
        "--format",
        "json",
        *args,
    )
    assert "Traceback" not in err
    return code, json.loads(out)


HISTORY = Path(".cer") / "history.sqlite"


def test_runs_are_recorded_beside_the_suite_and_listed(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = project.impl(GOOD), project.impl(BAD_ON_THREE)
    assert run_json(capsys, good)[0] == 0
    code, document = run_json(capsys, bad)
    assert code == 1
    assert document["flaky"] == []
    assert HISTORY.is_file()
    with sqlite3.connect(HISTORY) as db:
        assert db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 2
    code, out, _ = cer(capsys, "history", "--suite", "evals.toml")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].split()[:2] == ["1", document["run"]["run_id"][:8]]
    assert lines[1].split()[5:9] == ["2", "1", "0", "0"]
    assert lines[0].split()[8:] == ["coverage", "flaky", "verdict"]
    # the verdict is the sentence the run stated, as it stated it
    statement = document["conformance"]["statement"]
    assert statement.startswith("nonconformant") and lines[1].endswith(f"  {statement}")
    assert "  passed, coverage incomplete: " in lines[2]
    code, out, _ = cer(capsys, "history", "--format", "json")  # ./evals.toml by default
    listed = json.loads(out)["runs"]
    assert [r["summary"]["verdict"] for r in listed] == ["nonconformant", "passed"]
    assert listed[0]["conformance"] == statement
    code, out, _ = cer(capsys, "history", "--case", "doubles-three")
    assert "✘ FAIL" in out.splitlines()[2] and "✔ PASS" in out.splitlines()[3]


def test_no_history_and_history_path(
    project: Module, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    good = project.impl(GOOD)
    code, document = run_json(capsys, good, "--no-history")
    assert code == 0 and document["flaky"] is None
    assert not HISTORY.exists()
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "h.sqlite"
    assert run_json(capsys, good, "--history", str(elsewhere))[0] == 0
    assert elsewhere.is_file() and not HISTORY.exists()
    code, out, _ = cer(capsys, "history", "--history", str(elsewhere))
    assert "1 run from" in out


def test_a_corrupt_history_costs_a_warning_not_the_results(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    HISTORY.parent.mkdir()
    HISTORY.write_bytes(b"garbage " * 512)
    code, out, err = cer(capsys, "run", "evals.toml", "--impl", f"{project.impl(BAD_ON_THREE)}:f")
    assert code == 1
    assert "cer: warning: history:" in err and "not recorded" in err
    assert (
        "✘ FAIL  doubles-three" in out
        and f"— {VERDICT} · sandbox: " in out.rstrip().splitlines()[-1]
    )
    assert HISTORY.read_bytes() == b"garbage " * 512  # left alone
    code, _, err = cer(capsys, "history")
    assert code == 2 and "cer: error:" in err


def test_history_of_a_suite_never_run(project: Module, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cer(capsys, "history")
    assert code == 0 and out.startswith("no runs recorded")
    assert not HISTORY.exists()


def test_failed_reruns_only_what_failed(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, good = project.impl(BAD_ON_THREE), project.impl(GOOD)
    # No suite argument and no [tool.cer] suite: ./evals.toml is the suite.
    code, _, err = cer(capsys, "run", "--impl", f"{bad}:f", "--failed")
    assert code == 1 and "no recorded run" in err and "running the whole suite" in err
    code, document = run_json(capsys, good, "--failed")
    assert code == 3  # the fixed case passes; the others were deselected
    assert [(r["case_name"], r["status"], r["reason"]) for r in document["results"]] == [
        ("doubles-two", "skipped", "deselected"),
        ("doubles-three", "pass", None),
        ("doubles-four", "skipped", "deselected"),
    ]
    code, out, err = cer(capsys, "run", "evals.toml", "--impl", f"{good}:f", "--failed")
    assert code == 0 and "3 cases: 3 passed" in out
    assert "had no failed or errored cases: running the whole suite" in err
    code, _, err = cer(
        capsys, "run", "evals.toml", "--impl", f"{good}:f", "--failed", "--no-history"
    )
    assert code == 2 and "--no-history" in err


def test_diff_defaults_to_the_last_two_runs(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad = project.impl(GOOD), project.impl(BAD_ON_THREE)
    code, _, err = cer(capsys, "diff")
    assert code == 2 and "no history" in err
    run_json(capsys, good)
    code, _, err = cer(capsys, "diff")
    assert code == 2 and "needs two recorded runs" in err
    run_json(capsys, bad)
    code, out, _ = cer(capsys, "diff")
    assert code == 1  # a regression
    assert "regressions (1):" in out and "doubles-three  pass → fail" in out
    assert out.splitlines()[-1] == (
        "1 regressions, 0 fixes, 0 changed, 0 new, 0 removed, 2 unchanged"
    )
    code, out, _ = cer(capsys, "diff", "1", "2", "--format", "json")  # newest to older
    assert code == 0
    assert [c["case_name"] for c in json.loads(out)["fixes"]] == ["doubles-three"]
    code, _, err = cer(capsys, "diff", "7")
    assert code == 2 and "no run #7" in err


def test_flaky_cases_are_marked_in_history_and_json(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    wobbly = project.impl(WOBBLY)
    # Without the sandbox: the wobble is a flag file beside the suite.
    code, first = run_json(capsys, wobbly, "--sandbox", "off")
    assert code == 0 and first["flaky"] == []
    code, second = run_json(capsys, wobbly, "--sandbox", "off")
    assert code == 1
    assert second["run"]["implementation_id"] == first["run"]["implementation_id"]
    assert second["flaky"] == ["doubles-three"]
    assert [r["flaky"] for r in second["results"]] == [False, True, False]
    _, out, _ = cer(capsys, "history")
    assert "  1: doubles-three  nonconformant" in out.splitlines()[1]
    _, out, _ = cer(capsys, "history", "--case", "doubles-three")
    assert all("flaky" in line.split() for line in out.splitlines()[2:4])
    _, out, _ = cer(capsys, "run", "evals.toml", "--impl", f"{wobbly}:f", "--sandbox", "off")
    assert "flaky (1): doubles-three" in out


def test_reports_and_coverage_from_one_run(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = project.impl(BAD_ON_THREE)
    code, out, _err = cer(
        capsys,
        "run",
        "evals.toml",
        "--impl",
        f"{bad}:f",
        "--format",
        "json",
        "-o",
        "out/main.json",
        "--report",
        "json=out/report.json",
        "--report",
        "junit",
        "--report",
        "manifest=out/m.json",
        "--report",
        "github",
        "--no-history",
    )
    assert code == 1
    assert Path("out/main.json").read_text() == Path("out/report.json").read_text()
    assert Path("cer-junit.xml").read_text().startswith("<?xml")
    manifest = json.loads(Path("out/m.json").read_text())
    assert manifest["conformance"] == (VERDICT)
    assert manifest["coverage"]["constraints_verified"] == 0
    lines = out.splitlines()
    assert f"— {VERDICT} · sandbox: " in lines[0]  # the summary line, then the annotations
    assert lines[1].startswith("::error file=evals.toml,line=")
    assert lines[-1].startswith("::notice title=cer::demo")


def test_a_report_on_stdout_moves_the_text_report_to_stderr(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    good = project.impl(GOOD)
    code, out, err = cer(
        capsys, "run", "evals.toml", "--impl", f"{good}:f", "--report", "tap=-", "--no-history"
    )
    assert code == 0
    assert out.startswith("TAP version 14\n1..3\n")
    assert "3 cases: 3 passed" in err
    code, _, err = cer(
        capsys, "run", "evals.toml", "--impl", f"{good}:f", "--format", "json", "--report", "tap=-"
    )
    assert code == 2 and "standard output" in err
    code, _, err = cer(
        capsys,
        "run",
        "evals.toml",
        "--impl",
        f"{good}:f",
        "--report",
        "json=same",
        "--report",
        "tap=same",
    )
    assert code == 2 and "both write same" in err
    code, _, err = cer(
        capsys,
        "run",
        "evals.toml",
        "--impl",
        f"{good}:f",
        "-o",
        "r.json",
        "--report",
        "json=r.json",
    )
    assert code == 2 and "--output and --report json" in err
    with pytest.raises(SystemExit):
        main(["run", "evals.toml", "--impl", f"{good}:f", "--report", "pdf"])


def test_coverage_line_and_details(project: Module, capsys: pytest.CaptureFixture[str]) -> None:
    good = project.impl(GOOD)
    _, out, _ = cer(capsys, "run", "evals.toml", "--impl", f"{good}:f", "--no-history")
    assert (
        "coverage: 1 of 2 constraints covered, 1 verified · 1 needs a case · "
        "1 unknown constraint in verifies" in out
    )
    assert 'verifies unknown constraint "dobules" (did you mean "doubles"?)' in out
    assert "needs a case" not in out.replace("1 needs a case", "")
    _, out, _ = cer(
        capsys, "run", "evals.toml", "--impl", f"{good}:f", "--no-history", "--coverage"
    )
    assert "  needs a case: never-negative" in out
    assert "  verified: doubles" in out


def test_failed_follows_its_own_implementation_after_a_matrix_run(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, good = project.impl(BAD_ON_THREE), project.impl(GOOD)
    code, _, _ = cer(capsys, "run", "evals.toml", "--impl", f"{bad}:f", "--impl", f"{good}:f")
    assert code == 1
    code, document = run_json(capsys, bad, "--failed")
    assert code == 1
    assert [r["status"] for r in document["results"]] == ["skipped", "fail", "skipped"]


TRIGGER = (
    "CREATE TRIGGER all_pass AFTER INSERT ON eval_case_results BEGIN "
    "UPDATE eval_case_results SET status = 'pass' WHERE run_id = NEW.run_id; END"
)


def test_a_tampered_history_stops_the_run_and_the_rerun(
    project: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, good = project.impl(BAD_ON_THREE), project.impl(GOOD)
    assert run_json(capsys, bad)[0] == 1
    with sqlite3.connect(HISTORY) as db:
        db.execute(TRIGGER)
    code, out, err = cer(capsys, "run", "evals.toml", "--impl", f"{good}:f", "--failed")
    assert code == 2 and out == ""
    assert "nothing to rerun" not in err
    assert f"cer: error: history: {HISTORY} is not a history cer made: " in err
    assert "trigger 'all_pass'" in err and "--no-history" in err
    code, out, err = cer(capsys, "run", "evals.toml", "--impl", f"{bad}:f")
    assert code == 2 and out == "" and "is not a history cer made" in err
    code, _, err = cer(capsys, "history")
    assert code == 2 and "is not a history cer made" in err
    assert run_json(capsys, bad, "--no-history")[0] == 1
    with sqlite3.connect(HISTORY) as db:
        assert db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 1


def test_a_history_tampered_during_the_run_is_not_written(
    project: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_json(capsys, project.impl(GOOD))[0] == 0
    real_run = cli.run_suite

    def run_then_tamper(*args: Any, **kwargs: Any) -> Any:
        run = real_run(*args, **kwargs)
        with sqlite3.connect(HISTORY) as db:  # as a case of the run could have done
            db.execute(TRIGGER)
        return run

    monkeypatch.setattr(cli, "run_suite", run_then_tamper)
    code, out, err = cer(capsys, "run", "evals.toml", "--impl", f"{project.impl(BAD_ON_THREE)}:f")
    assert code == 2  # whatever the results: the record could not be made
    assert "✘ FAIL  doubles-three" in out
    assert "is not a history cer made" in err and "this run is not recorded" in err
    with sqlite3.connect(HISTORY) as db:
        assert db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 1


def test_coverage_is_judged_on_the_files_as_read_before_the_run(
    project: Module, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    good = project.impl(GOOD)
    code, before = run_json(capsys, good, "--no-history")
    assert code == 0
    real_run = cli.run_suite
    doc = project.root / "commonsformat.md"

    def run_and_rewrite(*args: Any, **kwargs: Any) -> Any:
        run = real_run(*args, **kwargs)
        # What an implementation without a sandbox could do while its cases run.
        doc.write_text("<constraints>\n- dobules: claimed.\n</constraints>\n", encoding="utf-8")
        (project.root / "evals.toml").write_text(SUITE.replace("dobules", "doubles"))
        return run

    monkeypatch.setattr(cli, "run_suite", run_and_rewrite)
    code, after = run_json(capsys, good, "--no-history")
    assert code == 0
    assert after["coverage"] == before["coverage"]
    assert after["coverage"]["constraints_total"] == 2
    assert [u["constraint"] for u in after["coverage"]["unknown_references"]] == ["dobules"]
    assert after["run"]["suite_hash"] == before["run"]["suite_hash"]


def test_a_reason_cut_for_cer_diff_says_it_was_cut() -> None:
    from cer.history.records import CaseChange
    from cer.reports.text import _change_line

    long = "rejects: expected a rejection, but the implementation returned " + "x" * 200
    line = _change_line("+", CaseChange("c", None, "fail", long, None, "mismatch"))
    assert line.endswith("…)")
    assert len(line.split("  (", 1)[1]) == 121
    short = _change_line("+", CaseChange("c", None, "fail", "a: no\nb: no", None, "mismatch"))
    assert short.endswith("(a: no b: no)")

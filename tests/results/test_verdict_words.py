"""The verdict word is decided in one place (:func:`cer.results.conformance.conformance_of`)
and agrees with the exit code: never ``conformant`` while the module's coverage is
incomplete (a constraint without a case, a malformed block, an unknown name in
``verifies``, no constraint at all, an unreadable document) or the run stands for part
of the suite (a selection, a stop, a shard); a shard speaks only of its own cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cer.cli.exits import ExitCode, exit_code_for
from cer.cli.main import main
from cer.engine.options import OTHER_SHARD, stopped_reason
from cer.model import CaseResult, RunResult, Status
from cer.results.conformance import (
    UNREADABLE,
    CoverageCount,
    conformance_of,
    word_of,
)
from cer.tui.controller import run_verdict
from cer.tui.state.coverage_view import read_doc
from pytest_plugin.test_plugin import pytest_session
from reports.test_reports import validate_json

WORD_EXIT = {
    "conformant": ExitCode.OK,
    "passed": ExitCode.OK,
    "incomplete": ExitCode.INCOMPLETE,
    "nonconformant": ExitCode.FAILED,
}
"""Without a baseline or --require-coverage, the exit code each word goes with."""


def _run(*statuses: tuple[Status, str | None], notes: tuple[str, ...] = ()) -> RunResult:
    results = tuple(
        CaseResult(f"c{i}", "functional", "functional", status, reason, position=i)
        for i, (status, reason) in enumerate(statuses, start=1)
    )
    return RunResult("r", "t", "t:f@abc", 0, 1, results, notes=notes)


PASS = (Status.PASS, None)
FAIL = (Status.FAIL, "value: expected 1, observed 2")
DESELECTED = (Status.SKIPPED, "deselected")
ELSEWHERE = (Status.SKIPPED, OTHER_SHARD)
SHARD_NOTE = ("shard 1/2: covers 2 of the 4 cases; the others are skipped as in another shard",)

CASES = {
    "every case passed, every constraint covered": (
        _run(PASS, PASS),
        CoverageCount(3, 3),
        "conformant, 3 of 3 constraints covered",
    ),
    "a constraint without a case": (
        _run(PASS, PASS),
        CoverageCount(2, 3),
        "passed, coverage incomplete: 1 of 3 constraints without a case",
    ),
    "no constraint at all": (
        _run(PASS, PASS),
        CoverageCount(0, 0),
        "passed, coverage incomplete: no constraint found in commonsformat.md",
    ),
    "a malformed constraint block": (
        _run(PASS, PASS),
        CoverageCount(3, 3, problems=2),
        "passed, coverage incomplete: 3 of 3 constraints covered, 2 problems in the "
        "constraint block",
    ),
    "a verifies naming no constraint": (
        _run(PASS, PASS),
        CoverageCount(3, 3, unknown=1),
        "passed, coverage incomplete: 3 of 3 constraints covered, 1 unknown constraint in verifies",
    ),
    "an unreadable module document": (
        _run(PASS, PASS),
        UNREADABLE,
        "passed, coverage incomplete: commonsformat.md cannot be read",
    ),
    "a selection that passed": (
        _run(PASS, DESELECTED, PASS, DESELECTED),
        None,
        "incomplete, selection passed: 2 of 4 cases",
    ),
    "a selection with a failure": (
        _run(PASS, DESELECTED, FAIL, DESELECTED),
        None,
        "nonconformant, selection of 2 of 4 cases",
    ),
    "a run stopped early": (
        _run(FAIL, (Status.SKIPPED, stopped_reason(1)), (Status.SKIPPED, stopped_reason(1))),
        None,
        "nonconformant, stopped early: 2 of 3 cases not run",
    ),
    "a shard that passed": (
        _run(PASS, ELSEWHERE, PASS, ELSEWHERE, notes=SHARD_NOTE),
        CoverageCount(3, 3),
        "shard 1/2: passed, 2 of 4 cases; cer merge of every shard gives the run's verdict, "
        "3 of 3 constraints covered",
    ),
    "a shard with a failure": (
        _run(FAIL, ELSEWHERE, PASS, ELSEWHERE, notes=SHARD_NOTE),
        None,
        "shard 1/2: nonconformant, 2 of 4 cases; cer merge of every shard gives the run's verdict",
    ),
    "a selection within a shard": (
        _run(PASS, ELSEWHERE, DESELECTED, ELSEWHERE, notes=SHARD_NOTE),
        None,
        "shard 1/2: incomplete, 1 of 4 cases; cer merge of every shard gives the run's verdict",
    ),
    "a shard with a skip of its own": (
        _run((Status.SKIPPED, "category not supported: x"), ELSEWHERE, PASS, ELSEWHERE),
        None,
        "shard: incomplete, 2 of 4 cases; cer merge of every shard gives the run's verdict",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_word_is_honest_and_agrees_with_the_exit_code(name: str) -> None:
    run, coverage, statement = CASES[name]
    verdict = conformance_of(run, coverage)
    assert verdict.statement == statement
    assert verdict.to_dict()["verdict"] == verdict.word == word_of(statement, "")
    assert exit_code_for(run, verdict) == WORD_EXIT[verdict.word]
    if verdict.word != "conformant":
        assert "conformant" not in statement.replace("nonconformant", "")


def test_a_front_end_that_exits_0_for_a_passed_selection_calls_it_passed() -> None:
    run = _run(PASS, DESELECTED)
    verdict = conformance_of(run, selection_passes=True)
    assert verdict.statement == "passed, selection of 1 of 2 cases"
    failed = conformance_of(_run(FAIL, DESELECTED), selection_passes=True)
    assert failed.word == "nonconformant"


@pytest.mark.parametrize(
    "coverage",
    [CoverageCount(2, 3), CoverageCount(0, 0), CoverageCount(3, 3, problems=1), UNREADABLE],
)
def test_require_coverage_refuses_every_incomplete_coverage(coverage: CoverageCount) -> None:
    run = _run(PASS, PASS)
    verdict = conformance_of(run, coverage)
    assert verdict.shortfall()
    assert exit_code_for(run, verdict, require_coverage=True) == ExitCode.UNCOVERED
    complete = conformance_of(run, CoverageCount(3, 3))
    assert complete.shortfall() is None
    assert exit_code_for(run, complete, require_coverage=True) == ExitCode.OK


SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "adds"
category = "functional"
verifies = ["adds-numbers"]
input = { x = 1 }
expect = { output = 1 }

[[cases]]
name = "keeps"
category = "functional"
input = { x = 2 }
expect = { output = 2 }
"""

IMPL = "def run(x):\n    return x\n"

MALFORMED = (
    "# demo\n\n<constraints>\n- adds-numbers: it adds\nnot a bullet at all\n</constraints>\n"
)
NO_BLOCK = "# demo\n\nNo constraints are declared here.\n"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "impl.py").write_text(IMPL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return tmp_path


def _cer(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["run", "evals.toml", "--impl", "impl:run", "--no-history", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("document", "said", "refused"),
    [
        (MALFORMED, "1 problem in the constraint block", "the constraint block has 1 problem"),
        (NO_BLOCK, "no constraint found in commonsformat.md", "declares no constraint (0 of 0)"),
    ],
)
def test_a_module_document_that_declares_nothing_usable_is_never_conformant(
    folder: Path, capsys: pytest.CaptureFixture[str], document: str, said: str, refused: str
) -> None:
    (folder / "commonsformat.md").write_text(document, encoding="utf-8")
    code, out, _ = _cer(capsys, "-q", "--format", "json")
    assert code == ExitCode.OK
    results = json.loads(out)
    assert results["summary"]["verdict"] == results["conformance"]["verdict"] == "passed"
    assert said in results["conformance"]["statement"]
    code, out, err = _cer(capsys, "-q", "--require-coverage")
    assert code == ExitCode.UNCOVERED
    assert f"--require-coverage: {'commonsformat.md ' if 'declares' in refused else ''}" in err
    assert refused in err
    assert "— passed, coverage incomplete: " in out


def test_a_shard_speaks_of_its_own_cases_and_the_merge_of_the_run(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "commonsformat.md").write_text(
        "<constraints>\n- adds-numbers: it adds\n</constraints>\n", encoding="utf-8"
    )
    for index in (1, 2):
        code, out, _ = _cer(
            capsys, "--shard", f"{index}/2", "--format", "json", "--report", "github=gh.txt"
        )
        assert code == ExitCode.OK
        annotations = (folder / "gh.txt").read_text(encoding="utf-8")
        assert "::warning" not in annotations  # the other shard's cases are no finding
        assert f"shard {index}/2: passed" in annotations
        (folder / f"s{index}.json").write_text(out, encoding="utf-8")
        document = json.loads(out)
        assert document["summary"]["verdict"] == "passed"
        statement = document["conformance"]["statement"]
        assert statement.startswith(f"shard {index}/2: passed, 1 of 2 cases; cer merge")
        assert document["conformance"]["scope"] == f"shard {index}/2"
        assert validate_json(document, "results.schema.json") == []
    assert main(["merge", "s1.json", "s2.json"]) == ExitCode.OK
    assert "— conformant, 1 of 1 constraints covered" in capsys.readouterr().out


def test_the_terminal_ui_and_the_pytest_plugin_state_the_same_word(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs a pytest session twice (a whole one and a ``-k`` one): the plugin's summary and
    its exit code live in the pytest process."""
    (folder / "commonsformat.md").write_text(
        "<constraints>\n- adds-numbers: it adds\n- keeps-it: it keeps\n</constraints>\n",
        encoding="utf-8",
    )
    from cer.suite.loader import load_suite

    suite = load_suite(folder / "evals.toml")
    run = _run(PASS, PASS)
    verdict = run_verdict(suite, run, read_doc(folder / "evals.toml"), None)
    assert verdict.statement == "passed, coverage incomplete: 1 of 2 constraints without a case"
    done = pytest_session("evals.toml", "--cer-impl", "impl:run", "--cer-history", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "— passed, coverage incomplete: 1 of 2 constraints without a case" in done.stdout
    assert main(["history", "--format", "json"]) == ExitCode.OK
    (recorded,) = json.loads(capsys.readouterr().out)["runs"]
    assert recorded["summary"]["verdict"] == "passed"
    assert recorded["conformance"] == verdict.statement
    # pytest exits 0 for a -k selection that passed, and the word agrees (never conformant)
    done = pytest_session("evals.toml", "--cer-impl", "impl:run", "-k", "adds", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "— passed, selection of 1 of 2 cases, coverage incomplete: " in done.stdout
    (folder / "commonsformat.md").write_bytes(b"<constraints>\n- \xff\xfe: not UTF-8\n")
    unreadable = run_verdict(suite, run, read_doc(folder / "evals.toml"), None)
    assert unreadable.coverage == UNREADABLE and unreadable.word == "passed"


def test_an_unreadable_module_document_is_never_conformant(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "commonsformat.md").write_bytes(b"<constraints>\n- \xff\xfe: not UTF-8\n")
    code, out, err = _cer(capsys)
    assert code == ExitCode.OK
    assert "cer: warning: coverage: cannot read" in err
    assert out.rstrip().endswith(
        "— passed, coverage incomplete: commonsformat.md cannot be read · sandbox: "
        + out.rstrip().rsplit(" · sandbox: ")[1]
    )


def test_the_matrix_states_each_implementation_s_decided_word(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "commonsformat.md").write_text(
        "<constraints>\n- adds-numbers: it adds\n- keeps-it: it keeps\n</constraints>\n",
        encoding="utf-8",
    )
    (folder / "same.py").write_text(IMPL, encoding="utf-8")
    code = main(["run", "evals.toml", "--impl", "impl:run", "--impl", "same:run", "--no-history"])
    out = capsys.readouterr().out
    assert code == ExitCode.OK
    assert out.count("— passed") == 2 and "conformant" not in out
    assert "2 implementations × 2 cases: 2 passed · 0 disagreements" in out
    main(
        [
            "run",
            "evals.toml",
            "--impl",
            "impl:run",
            "--impl",
            "same:run",
            "--no-history",
            "--format",
            "json",
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert [i["summary"]["verdict"] for i in document["implementations"]] == ["passed"] * 2


def test_the_text_report_names_each_case_it_skipped_and_why(folder: Path) -> None:
    from cer.reports.text import render_report
    from cer.suite.loader import load_suite

    suite = load_suite(folder / "evals.toml")
    unsupported = (Status.SKIPPED, "category not supported: functional")
    text = render_report(_run(unsupported, DESELECTED), suite)
    assert "○ skipped: 1 category not supported: functional, 1 deselected" in text
    assert "  category not supported: functional: c1\n" in text
    assert "c2" not in text  # left out by the selection: counted, not listed


def test_the_terminal_ui_matrix_never_claims_conformance() -> None:
    from cer.tui.state.matrix_layout import legend_word

    assert legend_word(_run(PASS, PASS)) == "passed"  # it does not judge coverage
    assert legend_word(_run(PASS, DESELECTED)) == "incomplete"
    assert legend_word(_run(PASS, FAIL)) == "nonconformant"

"""``cer check``: every problem of a suite found without running it; exit 0, 1 or 2."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

import support
from cer.cli.check import SuiteUnreadable, check_suite, render_check
from cer.cli.main import main

GREET = support.DATA / "greet"

CLEAN = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "one"
category = "functional"
input = { x = 1 }
expect = { output = 1 }
verifies = ["holds"]
"""


def write(folder: Path, text: str, doc: str | None = None) -> Path:
    path = folder / "evals.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    if doc is not None:
        (folder / "commonsformat.md").write_text(textwrap.dedent(doc), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_clean_suite_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, CLEAN, "<constraints>\n- holds: it holds.\n</constraints>\n")
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out == (
        "evals.toml: ok (1 case, 1 of 1 constraints covered; 0 errors, 0 warnings)\n"
    )


def test_unknown_constraints_are_errors_and_uncovered_ones_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("evals.toml", "commonsformat.md"):
        shutil.copy(GREET / name, tmp_path / name)
    assert main(["check", "evals.toml"]) == 1
    out = capsys.readouterr().out.splitlines()
    line = (
        check_suite(tmp_path / "evals.toml")
        .suite.case(  # type: ignore[union-attr]
            "rejects-empty-name"
        )
        .line
    )
    assert out == [
        f'evals.toml:{line}: error: case "rejects-empty-name" verifies unknown constraint '
        '"rejects-emtpy" (did you mean "rejects-empty"?)',
        'commonsformat.md:9: warning: constraint "rejects-empty" has no case (needs a case)',
        'commonsformat.md:11: warning: constraint "counts-nothing" has no case (needs a case)',
        "evals.toml: 1 error, 2 warnings",
    ]


def test_schema_problems_and_duplicates_are_all_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        commonsformat_evals = "0.2"

        [[cases]]
        name = "twice"
        category = "functional"
        expect = { output = 1 }

        [[cases]]
        category = "functional"
        expect = { output = 1 }

        [[cases]]
        name = "twice"
        category = 3
        expect = { output = 1 }
        tags = "not-a-list"

        [[adversarial]]
        name = "twice"
        category = "input-validation"
        expect = { output = 1 }
    """,
    )
    report = check_suite(path)
    messages = [f.message for f in report.errors]
    assert not report.ok
    assert any("name is required" in m for m in messages)
    assert any("category must be a non-empty string" in m for m in messages)
    assert any("tags must be a list of strings" in m for m in messages)
    assert any('"twice"' in m and "duplicate name" in m for m in messages)


def test_categories_expect_tables_and_fixtures(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        commonsformat_evals = "0.2"

        [[cases]]
        name = "typo-category"
        category = "functionl"
        expect = { output = 1 }

        [[cases]]
        name = "empty-expect"
        category = "functional"
        input = { x = 1 }
        expect = {}

        [[cases]]
        name = "absent-fixture"
        category = "functional"
        input = { path = "fixture://nowhere.txt" }
        expect = { output = 1 }

        [adversarial_coverage]
        categories = ["concurrency"]
    """,
    )
    report = check_suite(path)
    suite = report.suite
    assert suite is not None
    found = {(f.severity, f.line): f.message for f in report.findings}
    assert found[("error", suite.case("typo-category").line)].endswith('did you mean "functional"?')
    assert "expect table is empty" in found[("error", suite.case("empty-expect").line)]
    assert 'missing fixture "nowhere.txt"' in found[("error", suite.case("absent-fixture").line)]
    assert any('claims "concurrency"' in f.message for f in report.warnings)
    assert len(report.errors) == 3


def test_categories_mapped_in_the_project_config_are_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, CLEAN.replace('"functional"', '"concurrency"'))
    assert main(["check", "evals.toml"]) == 1
    assert 'unknown category "concurrency"' in capsys.readouterr().out
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cer]\nsuite = "evals.toml"\n[tool.cer.categories]\nconcurrency = "functional"\n'
    )
    assert main(["check"]) == 0  # the suite comes from [tool.cer] too


def test_invalid_toml_and_unknown_versions_are_problems(tmp_path: Path) -> None:
    path = write(tmp_path, 'commonsformat_evals = "0.2"\n[[cases]\nname = 1\n')
    (error,) = check_suite(path).errors
    assert error.line == 2 and "invalid TOML" in error.message
    path = write(tmp_path, 'commonsformat_evals = "9.9"\n')
    (error,) = check_suite(path).errors
    assert "unsupported commonsformat_evals version" in error.message
    assert render_check(check_suite(path)).endswith("evals.toml: 1 error, 0 warnings\n")


def test_malformed_constraints_are_errors_in_the_module_document(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        CLEAN,
        "intro\n<constraints>\n- holds: yes\n- holds: again\n- no separator\n</constraints>\n",
    )
    errors = [(f.file, f.line) for f in check_suite(path).errors]
    assert errors == [("commonsformat.md", 4), ("commonsformat.md", 5)]


def test_an_unreadable_suite_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SuiteUnreadable):
        check_suite(tmp_path / "missing.toml")
    assert main(["check", str(tmp_path / "missing.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["check", str(tmp_path)]) == 2  # a folder
    assert main(["check"]) == 2  # no suite, no [tool.cer] and no ./evals.toml

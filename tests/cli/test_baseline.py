"""Known-failure baselines: each row of the exit-code table, the file's errors, the
rewrite by ``cer baseline update``, and coverage required by the verdict."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cer.cli.exits import ExitCode
from cer.cli.main import main
from cer.results.baseline import BaselineError, load_baseline

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "adds"
category = "functional"
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

IMPL = """
def run(op):
    if op == "raise":
        raise RuntimeError("boom")
    return 1 if op == "ok" else 2
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "impl.py").write_text(IMPL, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def baseline(folder: Path, text: str, name: str = "known-failures.toml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run(folder: Path, *extra: str, impl: str = "impl:run") -> int:
    return main(["run", str(folder / "evals.toml"), "--impl", impl, "-q", *extra])


ALL_KNOWN = """
    # what still fails, and why
    [[known]]
    case = "tabs-*"     # every tab case
    status = "fail"
    reason = "tabs are not expanded yet"
    link = "https://example.org/tabs"

    [[known]]
    case = "crashes"
    status = "errored"
    reason = "raises on purpose"
"""


def test_listed_failures_failing_as_listed_exit_zero_and_are_never_conformant(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline(folder, ALL_KNOWN)
    assert run(folder, "--baseline", "known-failures.toml") == ExitCode.OK
    out = capsys.readouterr().out
    assert "nonconformant: 3 known failures, no regressions" in out.splitlines()[-1]
    assert "[known: tabs are not expanded yet]" in out


def test_an_unlisted_failure_is_a_regression(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline(
        folder,
        """
        [[known]]
        case = "tabs-*"
        status = "fail"
        reason = "tabs"
        """,
    )
    assert run(folder, "--baseline", "known-failures.toml") == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "crashes" in out and "[regression: not in the baseline]" in out
    assert "nonconformant: 2 known failures, 1 regression" in out


def test_a_listed_case_failing_otherwise_than_listed_is_a_regression(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline(
        folder,
        """
        [[known]]
        case = "tabs-*"
        status = "fail"
        reason = "tabs"

        [[known]]
        case = "crashes"
        status = "fail"
        reason = "it used to fail, not raise"
        """,
    )
    assert run(folder, "--baseline", "known-failures.toml") == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "[regression: listed as fail, now errored]" in out
    assert "1 regression" in out


def test_a_listed_case_that_passes_is_stale(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = baseline(
        folder, ALL_KNOWN + '\n[[known]]\ncase = "adds"\nstatus = "fail"\nreason = "x"\n'
    )
    assert run(folder, "--baseline", str(path)) == ExitCode.FAILED
    out = capsys.readouterr().out
    assert f"stale: adds passes: remove it from the baseline ({path}:14)" in out
    assert "3 known failures, no regressions, 1 stale baseline entry" in out


def test_an_entry_naming_no_case_is_an_error_naming_file_and_line(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline(
        folder, ALL_KNOWN + '\n[[known]]\ncase = "tab-expand"\nstatus = "fail"\nreason = "x"\n'
    )
    assert run(folder, "--baseline", "known-failures.toml") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "known-failures.toml:14: case 'tab-expand' names no case of" in err
    assert "did you mean 'tabs-expand'?" in err
    assert not (folder / ".cer" / "history.sqlite").exists()  # refused before anything ran


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[known]]\ncase = "adds"\nstatus = "pass"\nreason = "x"\n', ":1: status must be fail"),
        ('[[known]]\ncase = "adds"\nstatus = "fail"\n', ":1: the entry has no reason"),
        ('[[known]]\ncase = "adds"\nstatus = "fail"\nreason = " "\n', ":1: reason is empty"),
        ('[[known]]\ncase = "adds"\nstatus = "fail"\nreason = "x"\nwhy = 1\n', "unknown keys why"),
        ("[[known]\n", "not valid TOML"),
        ('expected = ["adds"]\n', "unknown top-level keys expected"),
        (
            '[[known]]\ncase = "adds"\nstatus = "fail"\nreason = "x"\n\n'
            '[[known]]\ncase = "adds"\nstatus = "errored"\nreason = "y"\n',
            ":6: case 'adds' is already listed at",
        ),
    ],
)
def test_a_bad_baseline_exits_two_with_file_and_line(
    folder: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    baseline(folder, text)
    assert run(folder, "--baseline", "known-failures.toml") == ExitCode.USAGE
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_a_missing_baseline_file_is_an_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(folder, "--baseline", "nope.toml") == ExitCode.USAGE
    assert "nope.toml: no such baseline file" in capsys.readouterr().err


def test_the_baseline_can_be_configured(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    baseline(folder, ALL_KNOWN)
    (folder / "pyproject.toml").write_text(
        '[tool.cer]\nsuite = "evals.toml"\nimpl = "impl:run"\nbaseline = "known-failures.toml"\n',
        encoding="utf-8",
    )
    assert main(["run", "-q"]) == ExitCode.OK
    assert "3 known failures, no regressions" in capsys.readouterr().out


def test_an_entry_for_another_implementation_does_not_apply(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "other.py").write_text(IMPL, encoding="utf-8")
    baseline(
        folder,
        ALL_KNOWN.replace(
            'reason = "raises on purpose"', 'reason = "raises on purpose"\nimplementation = "other"'
        ),
    )
    assert run(folder, "--baseline", "known-failures.toml") == ExitCode.FAILED
    assert "1 regression" in capsys.readouterr().out
    assert run(folder, "--baseline", "known-failures.toml", impl="other:run") == ExitCode.OK


def test_a_shard_counts_only_its_own_cases(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline(folder, ALL_KNOWN + '\n[[known]]\ncase = "adds"\nstatus = "fail"\nreason = "x"\n')
    # shard 2/2 runs tabs-expand and crashes: "adds" (stale) is another shard's business
    assert run(folder, "--baseline", "known-failures.toml", "--shard", "2/2") == ExitCode.OK
    out = capsys.readouterr().out
    assert "2 known failures, no regressions" in out and "stale" not in out
    assert run(folder, "--baseline", "known-failures.toml", "--shard", "1/2") == ExitCode.FAILED


def stated(out: str) -> str:
    """The verdict the summary line (the last line of ``out``) states."""
    return out.strip().splitlines()[-1].split(" — ", 1)[1].split(" · sandbox: ")[0]


def merge(folder: Path, *extra: str) -> int:
    return main(["merge", str(folder / "shard-1.json"), str(folder / "shard-2.json"), *extra])


def test_merged_shards_are_judged_against_the_baseline_as_a_run_is(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for index in (1, 2):
        out = ["--format", "json", "-o", f"shard-{index}.json", "--no-history"]
        run(folder, "--shard", f"{index}/2", *out)
    capsys.readouterr()
    # without a baseline, the failures fail the merged run
    assert merge(folder) == ExitCode.FAILED
    assert stated(capsys.readouterr().out) == "nonconformant"
    # every listed case failing as listed, over both shards: exit 0, never conformant
    baseline(folder, ALL_KNOWN)
    assert merge(folder, "--baseline", "known-failures.toml") == ExitCode.OK
    out = capsys.readouterr().out
    assert stated(out) == "nonconformant: 3 known failures, no regressions"
    assert "[known: tabs are not expanded yet]" in out
    # the JSON carries the verdict and the check, as cer run's does
    assert merge(folder, "--baseline", "known-failures.toml", "--format", "json") == ExitCode.OK
    document = json.loads(capsys.readouterr().out)
    assert document["conformance"]["statement"] == "nonconformant: 3 known failures, no regressions"
    assert [k["case_name"] for k in document["baseline"]["known_failures"]] == [
        "tabs-expand",
        "tabs-keep",
        "crashes",
    ]
    # a failure of a shard the file does not list is a regression of the whole run
    baseline(folder, '[[known]]\ncase = "tabs-*"\nstatus = "fail"\nreason = "tabs"\n')
    assert merge(folder, "--baseline", "known-failures.toml") == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "[regression: not in the baseline]" in out
    assert stated(out) == "nonconformant: 2 known failures, 1 regression"
    # a listed case that passed in any shard is stale
    path = baseline(
        folder, ALL_KNOWN + '\n[[known]]\ncase = "adds"\nstatus = "fail"\nreason = "x"\n'
    )
    assert merge(folder, "--baseline", str(path), "-o", "merged.txt") == ExitCode.FAILED
    out = capsys.readouterr().out
    assert stated(out) == "nonconformant: 3 known failures, no regressions, 1 stale baseline entry"
    assert f"stale: adds passes: remove it from the baseline ({path}:14)" in (
        folder / "merged.txt"
    ).read_text(encoding="utf-8")
    # an entry naming no case of the suite is an error before anything is reported
    baseline(folder, '[[known]]\ncase = "addz"\nstatus = "fail"\nreason = "x"\n')
    assert merge(folder, "--baseline", "known-failures.toml") == ExitCode.USAGE
    captured = capsys.readouterr()
    assert "known-failures.toml:1: case 'addz' names no case" in captured.err
    assert "did you mean 'adds'?" in captured.err and captured.out == ""
    assert merge(folder, "--baseline", "missing.toml") == ExitCode.USAGE
    assert "no such baseline file" in capsys.readouterr().err
    # coverage counts as in cer run: required without a module document is a usage error
    assert merge(folder, "--require-coverage") == ExitCode.USAGE
    assert "there is no commonsformat.md beside" in capsys.readouterr().err
    (folder / "commonsformat.md").write_text(MODULE_DOC, encoding="utf-8")
    baseline(folder, ALL_KNOWN)
    code = merge(folder, "--baseline", "known-failures.toml", "--require-coverage")
    captured = capsys.readouterr()
    assert code == ExitCode.UNCOVERED
    assert "3 of 3 constraints have no case" in captured.err
    assert stated(captured.out) == (
        "nonconformant: 3 known failures, no regressions, coverage incomplete: "
        "3 of 3 constraints without a case, 3 need repair"
    )


def test_a_deselected_listed_case_is_neither_known_nor_stale(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline(folder, ALL_KNOWN)
    code = run(folder, "--baseline", "known-failures.toml", "--format", "json", "--case", "tabs-*")
    document = json.loads(capsys.readouterr().out)
    assert code == ExitCode.INCOMPLETE
    assert document["baseline"]["not_run"] == ["crashes"]
    assert document["conformance"]["statement"] == (
        "nonconformant: 2 known failures, no regressions, selection of 2 of 4 cases"
    )


def test_load_reads_entries_with_their_lines(folder: Path) -> None:
    loaded = load_baseline(baseline(folder, ALL_KNOWN))
    assert [(e.case, e.status, e.line) for e in loaded.entries] == [
        ("tabs-*", "fail", 3),
        ("crashes", "errored", 9),
    ]
    assert loaded.entries[0].link == "https://example.org/tabs"
    with pytest.raises(BaselineError, match="known must be an array of tables"):
        load_baseline(baseline(folder, 'known = "adds"\n'))


# --- cer baseline update ---------------------------------------------------------------


def test_update_removes_stale_entries_keeping_reasons_and_comments(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = baseline(
        folder,
        ALL_KNOWN + '\n[[known]]\ncase = "adds"  # fixed now\nstatus = "fail"\nreason = "x"\n',
    )
    assert run(folder, "--baseline", str(path)) == ExitCode.FAILED
    capsys.readouterr()
    assert main(["baseline", "update", "evals.toml", "--baseline", str(path)]) == ExitCode.OK
    assert "removed (now passes): adds" in capsys.readouterr().out
    text = path.read_text(encoding="utf-8")
    assert "fixed now" not in text and 'case = "adds"' not in text
    assert "# what still fails, and why" in text
    assert 'case = "tabs-*"     # every tab case' in text
    assert 'link = "https://example.org/tabs"' in text
    assert run(folder, "--baseline", str(path)) == ExitCode.OK


def test_update_narrows_a_glob_that_names_a_passing_case(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = baseline(
        folder,
        """
        [[known]]
        case = "*s"
        status = "fail"
        reason = "not yet"

        [[known]]
        case = "crashes"
        status = "errored"
        reason = "raises"
        """,
    )
    # "*s" names adds (which passes) and crashes, which its own entry lists
    assert run(folder, "--baseline", str(path)) == ExitCode.FAILED
    assert main(["baseline", "update", "evals.toml", "--baseline", str(path)]) == ExitCode.FAILED
    out = capsys.readouterr()
    assert "removed (now passes): *s" in out.out
    assert "not added (a regression; --add-new adds it): tabs-expand" in out.out
    assert "--add-new" in out.err
    text = path.read_text(encoding="utf-8")
    assert 'case = "*s"' not in text and 'case = "tabs-expand"' not in text


def test_update_refuses_new_failures_unless_asked(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = folder / "known-failures.toml"
    assert run(folder) == ExitCode.FAILED
    assert main(["baseline", "update", "--baseline", str(path)]) == ExitCode.USAGE
    assert "--add-new creates it" in capsys.readouterr().err
    assert main(["baseline", "update", "evals.toml", "--baseline", str(path), "--add-new"]) == 0
    assert "added: tabs-expand" in capsys.readouterr().out
    loaded = load_baseline(path)
    assert [(e.case, e.status) for e in loaded.entries] == [
        ("tabs-expand", "fail"),
        ("tabs-keep", "fail"),
        ("crashes", "errored"),
    ]
    assert all("say why" in e.reason for e in loaded.entries)
    assert run(folder, "--baseline", str(path)) == ExitCode.OK


def test_update_from_a_results_document(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = baseline(
        folder, ALL_KNOWN + '\n[[known]]\ncase = "adds"\nstatus = "fail"\nreason = "x"\n'
    )
    run(folder, "--format", "json", "--output", "results.json", "--no-history")
    assert (
        main(
            [
                "baseline",
                "update",
                "evals.toml",
                "--baseline",
                str(path),
                "--results",
                "results.json",
            ]
        )
        == ExitCode.OK
    )
    assert 'case = "adds"' not in path.read_text(encoding="utf-8")


def test_update_without_a_recorded_run_says_so(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = baseline(folder, ALL_KNOWN)
    assert main(["baseline", "update", "evals.toml", "--baseline", str(path)]) == ExitCode.USAGE
    assert "pass --results RESULTS.json instead" in capsys.readouterr().err


# --- coverage in the verdict -------------------------------------------------------------

MODULE_DOC = """
# demo

<constraints>
- adds-numbers: it adds
- expands-tabs: it expands tabs
- never-crashes: it never crashes
</constraints>
"""


def test_require_coverage_exits_four_on_an_uncovered_constraint(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "commonsformat.md").write_text(MODULE_DOC, encoding="utf-8")
    suite = (folder / "evals.toml").read_text(encoding="utf-8")
    suite = suite.replace(
        'name = "adds"\ncategory = "functional"',
        'name = "adds"\ncategory = "functional"\nverifies = ["adds-numbers", "add-numbers"]',
    )
    (folder / "evals.toml").write_text(suite, encoding="utf-8")
    assert run(folder, "--case", "adds", "--no-history") == ExitCode.INCOMPLETE
    out = capsys.readouterr().out
    assert "2 of 3 constraints without a case" in out.splitlines()[-1]
    assert "1 unknown constraint in verifies" in out.splitlines()[-1]
    baseline(folder, ALL_KNOWN)
    code = run(folder, "--baseline", "known-failures.toml", "--require-coverage", "--no-history")
    captured = capsys.readouterr()
    assert code == ExitCode.UNCOVERED
    assert "2 of 3 constraints have no case" in captured.err
    assert "1 verifies entries name no constraint" in captured.err
    # a regression outranks the shortfall
    (folder / "known-failures.toml").unlink()
    assert run(folder, "--require-coverage", "--no-history") == ExitCode.FAILED


def test_require_coverage_without_a_module_document_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(folder, "--require-coverage") == ExitCode.USAGE
    assert "there is no commonsformat.md beside" in capsys.readouterr().err


def test_require_coverage_can_be_configured(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "pyproject.toml").write_text(
        '[tool.cer]\nimpl = "impl:run"\nrequire_coverage = "yes"\n', encoding="utf-8"
    )
    assert run(folder) == ExitCode.USAGE
    assert "require_coverage must be true or false" in capsys.readouterr().err

"""`cer run`: exit codes, output streams, configuration and clear errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cer.cli.exits import ExitCode
from cer.cli.main import main
from support import EXAMPLES, Module, cer_in_process

CALC = EXAMPLES / "calc" / "evals.toml"

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "doubles"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[adversarial]]
name = "races"
category = "concurrency"
input = { x = 1 }
expect = { output = 2 }
"""


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cer ARGS`` from ``cwd``, in this process: what these tests read (the exit code,
    the two streams) is the same as a process's (the one below checks a real one)."""
    return cer_in_process(args, cwd)


def run_cli_process(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cer.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_good_example_exits_zero(tmp_path: Path) -> None:
    done = run_cli_process(
        ["run", str(CALC), "--impl", "calc_ref:evaluate", "--no-history"], tmp_path
    )
    assert done.returncode == ExitCode.OK, done.stderr
    assert "conformant" in done.stdout
    assert done.stderr == ""


def test_wrong_example_exits_one_and_names_failures(tmp_path: Path) -> None:
    done = run_cli(["run", str(CALC), "--impl", "calc_sloppy:evaluate", "--no-history"], tmp_path)
    assert done.returncode == ExitCode.FAILED
    assert "power-is-right-associative" in done.stdout
    assert "expected int 512, observed int 64" in done.stdout


def test_skipped_cases_make_the_run_incomplete(
    module: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(SUITE)
    impl = module.impl("def f(x):\n    return x * 2\n")
    code = main(["run", str(module.root / "evals.toml"), "--impl", f"{impl}:f", "-q"])
    out = capsys.readouterr().out
    assert code == ExitCode.INCOMPLETE
    assert "category not supported: concurrency" in out
    assert "incomplete" in out


def test_json_format_is_the_full_results_structure(
    module: Module, capsys: pytest.CaptureFixture[str]
) -> None:
    module.suite(SUITE)
    impl = module.impl("def f(x):\n    return x * 2\n")
    code = main(["run", str(module.root / "evals.toml"), "--impl", f"{impl}:f", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == ExitCode.INCOMPLETE
    assert [r["status"] for r in data["results"]] == ["pass", "skipped"]
    assert data["summary"]["cases_total"] == 2
    assert data["run"]["implementation_id"].startswith(f"{impl}:f@")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('commonsformat_evals = "9.9"\n', "9.9"),
        ("[[cases]\nname = 1\n", "evals.toml:1:8: invalid TOML"),
        ('commonsformat_evals = "0.2"\n', "no cases"),
    ],
)
def test_bad_suites_exit_two_with_a_clear_message(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "evals.toml").write_text(text)
    done = run_cli(["run", "evals.toml", "--impl", "x:y"], tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_unknown_version_names_the_supported_ones(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text('commonsformat_evals = "9.9"\n')
    done = run_cli(["run", "evals.toml", "--impl", "x:y"], tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert "0.1" in done.stderr and "0.2" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "missing.toml", "--impl", "x:y"],
        ["run", "evals.toml"],
        ["run", "evals.toml", "--impl", "no-colon"],
        ["run", "evals.toml", "--impl", "x:y", "--timeout", "-1"],
    ],
)
def test_usage_errors_exit_two(tmp_path: Path, args: list[str]) -> None:
    if "evals.toml" in args:  # without it, ./evals.toml would be the suite
        (tmp_path / "evals.toml").write_text(SUITE)
    done = run_cli(args, tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert "Traceback" not in done.stderr


def test_no_suite_anywhere_exits_two(tmp_path: Path) -> None:
    """No argument, no [tool.cer] suite and no ./evals.toml (with one, cer run uses it)."""
    done = run_cli(["run", "--impl", "x:y"], tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert "./evals.toml" in done.stderr and "Traceback" not in done.stderr


def test_missing_module_is_errored_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(SUITE.replace("concurrency", "functional"))
    done = run_cli(["run", "evals.toml", "--impl", "no_such_module:f"], tmp_path)
    assert done.returncode == ExitCode.FAILED
    assert "No module named 'no_such_module'" in done.stdout
    assert "could not be loaded" in done.stdout


def test_project_configuration_makes_a_bare_run_work(tmp_path: Path) -> None:
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "evals.toml").write_text(SUITE.replace("concurrency", "functional"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "doubler.py").write_text("def f(x):\n    return x * 2\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cer]\nsuite = "spec/evals.toml"\nimpl = "doubler:f"\npaths = ["src"]\ntimeout = 3\n'
    )
    (tmp_path / "sub").mkdir()
    done = run_cli(["run"], tmp_path / "sub")
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr


def test_unknown_configuration_key_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.cer]\nimpll = "x:y"\n')
    done = run_cli(["run"], tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert "impll" in done.stderr


def test_help_teaches(tmp_path: Path) -> None:
    done = run_cli(["run", "--help"], tmp_path)
    assert done.returncode == 0
    for word in ("--impl", "--timeout", "--isolation", "exit codes", "MODULE:ATTR"):
        assert word in done.stdout


def test_output_file_gets_the_report(module: Module, tmp_path: Path) -> None:
    module.suite(SUITE.replace("concurrency", "functional"))
    impl = module.impl("def f(x):\n    return x * 2\n")
    target = tmp_path / "out.json"
    code = main(
        [
            "run",
            str(module.root / "evals.toml"),
            "--impl",
            f"{impl}:f",
            "--format",
            "json",
            "--output",
            str(target),
        ]
    )
    assert code == ExitCode.OK
    assert json.loads(target.read_text())["summary"]["cases_passed"] == 2


def test_shards_run_apart_and_merge_into_the_whole_run(tmp_path: Path) -> None:
    shutil.copytree(
        EXAMPLES / "calc", tmp_path / "calc", ignore=shutil.ignore_patterns(".cer", "__pycache__")
    )
    suite = tmp_path / "calc" / "evals.toml"
    parts = []
    for index in (1, 2, 3):
        target = tmp_path / f"shard{index}.json"
        done = run_cli(
            [
                "run",
                str(suite),
                "--impl",
                "calc_sloppy:evaluate",
                "--no-history",
                "--shard",
                f"{index}/3",
                "-j",
                "2",
                "--format",
                "json",
                "-o",
                str(target),
            ],
            tmp_path,
        )
        assert done.returncode in (ExitCode.OK, ExitCode.FAILED), done.stderr
        parts.append(str(target))
    merged = run_cli(["merge", *parts, "--format", "json"], tmp_path)
    assert merged.returncode == ExitCode.FAILED, merged.stderr
    document = json.loads(merged.stdout)
    assert document["summary"]["cases_total"] == 70
    assert document["summary"]["cases_failed"] == 8
    assert document["summary"]["cases_skipped"] == 0
    whole = run_cli(
        [
            "run",
            str(suite),
            "--impl",
            "calc_sloppy:evaluate",
            "--no-history",
            "-j",
            "1",
            "--format",
            "json",
        ],
        tmp_path,
    )
    expected = [(r["case_name"], r["status"]) for r in json.loads(whole.stdout)["results"]]
    assert [(r["case_name"], r["status"]) for r in document["results"]] == expected
    overlap = run_cli(["merge", parts[0], parts[0], parts[1], parts[2]], tmp_path)
    assert overlap.returncode == ExitCode.USAGE
    assert "more than one document" in overlap.stderr
    missing = run_cli(["merge", parts[0], parts[1]], tmp_path)
    assert missing.returncode == ExitCode.USAGE
    assert "no document" in missing.stderr


def test_a_clean_shard_exits_zero(tmp_path: Path) -> None:
    done = run_cli(
        ["run", str(CALC), "--impl", "calc_ref:evaluate", "--no-history", "--shard", "2/2"],
        tmp_path,
    )
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    assert "in another shard" in done.stdout


@pytest.mark.parametrize("value", ["0", "many", "-3"])
def test_jobs_must_be_a_count_or_auto(tmp_path: Path, value: str) -> None:
    done = run_cli(["run", str(CALC), "--impl", "calc_ref:evaluate", "-j", value], tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert "-j" in done.stderr


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (["--case", "no-such-*"], "--case 'no-such-*' matches no case of the suite"),
        (["-k", "nosuchtext"], "-k 'nosuchtext' matches no case of the suite"),
        (["--case", "rejects-*", "--case", "typo-*"], "--case 'typo-*' matches no case"),
        (
            ["--case", "integer-literal", "--category", "resource"],
            "the case selection (--case, --category, --class, --tag, -k) matches no case",
        ),
    ],
)
def test_a_selection_that_matches_nothing_is_a_usage_error(
    selection: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(CALC), "--impl", "calc_ref:evaluate", "--no-history", *selection])
    assert code == ExitCode.USAGE
    assert message in capsys.readouterr().err


def test_a_selection_that_matches_some_cases_runs_them(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(CALC), "--impl", "calc_ref:evaluate", "--no-history", "-k", "modulo"])
    assert code == ExitCode.INCOMPLETE
    assert "4 passed, 0 failed, 0 errored, 66 skipped" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--path", "srcc"], "--path / [tool.cer] paths: srcc: no such folder"),
        (["--path", "evals.toml"], "--path / [tool.cer] paths: evals.toml: no such folder"),
        (
            ["--sandbox-read", "dta.csv"],
            "--sandbox-read / [tool.cer] sandbox_read: dta.csv: no such file or folder",
        ),
    ],
)
def test_a_mistyped_path_option_is_a_usage_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    said: str,
) -> None:
    """A folder for the import path, or a file to lend, that is not there was passed
    over without a word."""
    (tmp_path / "evals.toml").write_text(SUITE)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "evals.toml", "--impl", "m:f", *args]) == ExitCode.USAGE
    assert said in capsys.readouterr().err


def test_a_wrong_timeout_in_tool_cer_names_the_file_and_the_key(tmp_path: Path) -> None:
    from cer.config import ProjectConfig, UsageError, configured_timeout

    config = ProjectConfig({"timeout": "5"}, tmp_path / "pyproject.toml")
    with pytest.raises(UsageError) as caught:
        configured_timeout(None, config)
    assert str(caught.value) == (
        f"{tmp_path / 'pyproject.toml'}: [tool.cer] timeout must be a number of seconds above "
        "0 and at most 86400, e.g. timeout = 5, not '5'"
    )
    assert configured_timeout(None, ProjectConfig({"timeout": 3})) == 3.0
    assert configured_timeout(2.5, config) == 2.5


def test_network_deny_without_a_network_namespace_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Landlock alone refuses TCP only: ``--network deny`` refuses to run rather than
    say the network was denied while UDP reaches the machine's."""
    from cer import sandbox
    from cer.sandbox import world

    if not sandbox.status().available:
        pytest.skip("no Landlock here")
    monkeypatch.setenv(world.DISABLE_ENV, "1")
    code = main(["run", str(CALC), "--impl", "calc_ref:evaluate", "--network", "deny"])
    assert code == ExitCode.USAGE
    assert "--network deny needs a network namespace of the implementation's own" in (
        capsys.readouterr().err
    )


def test_the_summary_line_says_what_network_was_lent(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["run", str(CALC), "--impl", "calc_ref:evaluate", "--no-history", "--network", "allow"]
    )
    assert code == ExitCode.OK
    assert (
        capsys.readouterr()
        .out.rstrip()
        .endswith(" · network: the machine's (lent by --network allow)")
    )

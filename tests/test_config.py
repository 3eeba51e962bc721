"""Every command finds its suite the same way: the argument, then ``[tool.cer] suite``,
then ``./evals.toml``; and each one's ``--help`` says so."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cer.cli.exits import ExitCode
from cer.cli.main import main
from cer.config import SUITE_HELP, UsageError, find_project_config, resolve_suite
from cer.tui.__main__ import build_parser as tui_parser

SUITE = textwrap.dedent(
    """
    commonsformat_evals = "0.2"
    target = "t"

    [[cases]]
    name = "{name}"
    category = "functional"
    input = {{ x = 1 }}
    expect = {{ output = 2 }}
    """
)
IMPL = "def f(x):\n    return x * 2\n"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "impl.py").write_text(IMPL, encoding="utf-8")
    return tmp_path


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "command", ["run", "check", "derive", "approve", "discard", "history", "diff"]
)
def test_every_help_states_the_order(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert SUITE_HELP in _help([command], capsys)


def test_cer_tui_help_states_the_order() -> None:
    assert SUITE_HELP in " ".join(tui_parser().format_help().split())


def test_the_argument_then_the_project_then_the_folder(folder: Path) -> None:
    (folder / "evals.toml").write_text(SUITE.format(name="here"), encoding="utf-8")
    assert resolve_suite(None, find_project_config()) == Path("evals.toml")
    (folder / "pyproject.toml").write_text('[tool.cer]\nsuite = "sub/evals.toml"\n')
    assert resolve_suite(None, find_project_config()) == folder.resolve() / "sub/evals.toml"
    assert resolve_suite(Path("given.toml"), find_project_config()) == Path("given.toml")


def test_nothing_to_find_says_all_three_ways(folder: Path) -> None:
    with pytest.raises(UsageError, match=r"\[tool.cer\].*\./evals.toml"):
        resolve_suite(None, find_project_config())


def test_run_and_check_use_the_folder_suite(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "evals.toml").write_text(SUITE.format(name="found-here"), encoding="utf-8")
    assert main(["run", "--impl", "impl:f", "--no-history", "-v"]) == ExitCode.OK
    assert "found-here" in capsys.readouterr().out
    assert main(["check"]) == ExitCode.OK


def test_run_without_any_suite_is_a_usage_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--impl", "impl:f", "--no-history"]) == ExitCode.USAGE
    assert "./evals.toml" in capsys.readouterr().err
    assert main(["check"]) == ExitCode.USAGE

"""The cer-tui command line: the run arguments of cer run, plus watching and theme."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import cer.tui.__main__ as cli
from cer.cli.main import build_parser
from cer.config import resolve_run
from cer.engine.options import DEFAULT_TIMEOUT
from cer.tui.app import CerApp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "calc"


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[CerApp]:
    """Apps that main() would have run, without running them."""
    apps: list[CerApp] = []

    def run(self: CerApp, *args: Any, **kwargs: Any) -> None:
        apps.append(self)

    monkeypatch.setattr(CerApp, "run", run)
    return apps


def test_arguments_reach_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[CerApp]
) -> None:
    suite = tmp_path / "evals.toml"
    suite.write_text('commonsformat_evals = "0.2"\n')
    monkeypatch.chdir(tmp_path)
    code = cli.main(
        [
            str(suite),
            "--impl",
            "calc:evaluate",
            "--timeout",
            "3",
            "--case",
            "add-*",
            "--watch",
            "data",
            "--no-watch",
            "--theme",
            "light",
        ]
    )
    assert code == 0
    (app,) = started
    assert app.settings.suite_path == suite
    assert app.settings.options.impl == "calc:evaluate"
    assert app.settings.options.timeout == 3
    assert app.settings.base_selection.case_globs == ("add-*",)
    assert app.settings.watch is False
    assert app.theme == "light"
    assert app.settings.extra_watch == (Path("data"),)
    assert app.settings.history == tmp_path / ".cer" / "history.sqlite"


def test_several_implementations_reach_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[CerApp]
) -> None:
    suite = tmp_path / "evals.toml"
    suite.write_text('commonsformat_evals = "0.2"\n')
    monkeypatch.chdir(tmp_path)
    argv = [
        str(suite),
        "--impl",
        "calc_ref:evaluate",
        "--impl-cmd",
        "node calc.mjs",
        "--watch",
        ".",
    ]
    assert cli.main([*argv, "--timeout", "4"]) == 0
    (app,) = started
    assert app.session.several
    assert app.session.labels == ("calc_ref", "calc")
    assert [(o.kind, o.impl, o.timeout) for o in app.settings.implementations] == [
        ("python", "calc_ref:evaluate", 4),
        ("command", "node calc.mjs", 4),
    ]
    assert app.settings.options is app.settings.implementations[0]
    assert app.settings.extra_watch == (Path("."),)


def test_history_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[CerApp]
) -> None:
    suite = tmp_path / "evals.toml"
    suite.write_text('commonsformat_evals = "0.2"\n')
    monkeypatch.chdir(tmp_path)
    assert cli.main([str(suite), "--impl", "calc:evaluate", "--history", "runs.db"]) == 0
    assert cli.main([str(suite), "--impl", "calc:evaluate", "--no-history"]) == 0
    moved, off = started
    assert moved.settings.history == Path("runs.db")
    assert off.settings.history is None
    # Building the app creates nothing; only a finished run writes the history.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evals.toml"]


def test_tool_cer_configures_a_bare_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[CerApp]
) -> None:
    if not (EXAMPLE / "evals.toml").is_file():
        pytest.skip("the calc example is not there")
    shutil.copytree(EXAMPLE, tmp_path / "calc", ignore=shutil.ignore_patterns(".cer"))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cer]\nsuite = "calc/evals.toml"\nimpl = "calc_ref:evaluate"\n'
        'watch = ["calc/fixtures"]\ntheme = "high-contrast"\n'
    )
    monkeypatch.chdir(tmp_path)
    assert cli.main([]) == 0
    (app,) = started
    assert app.settings.suite_path == tmp_path / "calc" / "evals.toml"
    assert app.settings.options.impl == "calc_ref:evaluate"
    assert app.theme == "high-contrast"
    assert app.settings.extra_watch == (tmp_path / "calc" / "fixtures",)
    assert app.settings.watch is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["evals.toml"], "no implementation given"),
        (["evals.toml", "--impl", "calc:evaluate", "--theme", "neon"], "unknown theme"),
        (["missing.toml", "--impl", "calc:evaluate"], "no suite at"),
        (
            ["evals.toml", "--impl", "calc:evaluate", "--history", "h.db", "--no-history"],
            "not allowed with argument",
        ),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    started: list[CerApp],
) -> None:
    (tmp_path / "evals.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert not started


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (["--case", "no-such-*"], "--case 'no-such-*' matches no case of the suite"),
        (["-k", "nosuchtext"], "-k 'nosuchtext' matches no case of the suite"),
    ],
)
def test_a_selection_that_matches_nothing_exits_2(
    selection: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    started: list[CerApp],
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "calc")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(["calc/evals.toml", "--impl", "calc_ref:evaluate", "--no-history", *selection])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
    assert not started


def test_a_selection_that_matches_a_case_starts_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: list[CerApp]
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "calc")
    monkeypatch.chdir(tmp_path)
    argv = ["calc/evals.toml", "--impl", "calc_ref:evaluate", "--no-history", "-k", "modulo"]
    assert cli.main(argv) == 0
    assert len(started) == 1


@pytest.mark.parametrize(
    ("config", "argv", "timeout"),
    [
        ("", [], DEFAULT_TIMEOUT),
        ("timeout = 30\n", [], 30.0),
        ("timeout = 30\n", ["--timeout", "7"], 7.0),
    ],
)
def test_the_watch_loop_times_cases_out_as_cer_run_does(
    config: str,
    argv: list[str],
    timeout: float,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    started: list[CerApp],
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "calc", ignore=shutil.ignore_patterns(".cer"))
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.cer]\nsuite = "calc/evals.toml"\nimpl = "calc_ref:evaluate"\n{config}'
    )
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--no-history", *argv]) == 0
    (app,) = started
    assert app.settings.options.timeout == timeout
    assert all(o.timeout == timeout for o in app.settings.implementations)
    headless = resolve_run(build_parser().parse_args(["run", *argv]))
    assert headless.options.timeout == timeout


def test_a_retired_watch_timeout_says_what_to_write_instead(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    started: list[CerApp],
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "calc", ignore=shutil.ignore_patterns(".cer"))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cer]\nsuite = "calc/evals.toml"\nimpl = "calc_ref:evaluate"\nwatch_timeout = 0.5\n'
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main([])
    assert exited.value.code == 2
    assert "rename watch_timeout to timeout" in capsys.readouterr().err
    assert not started

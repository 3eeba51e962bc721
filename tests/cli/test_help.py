"""The command line's help and docs/cli.md name what the tables hold, and the top-level
parser imports only the module of the subcommand it is given."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

import pytest

import support
from cer import reports
from cer.cli import main as command_line
from cer.cli.main import SUBCOMMANDS, build_parser, modules_for
from cer.reports import STDOUT, ReportFormat

DOCS = support.ROOT / "docs"


def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands' parsers of ``parser``, by name."""
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def run_epilog() -> str:
    from cer.cli.run import epilog

    return " ".join(epilog().split())


def test_the_run_help_names_every_report_format_and_where_it_goes() -> None:
    text = run_epilog()
    for name, spec in reports.FORMATS.items():
        where = "stdout" if spec.default_path == STDOUT else spec.default_path
        assert f"{name} ({where})" in text
    assert "markdown (cer-summary.md)" in text


def test_the_run_help_reads_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        reports.FORMATS,
        "csv",
        ReportFormat("csv", "one line per case", "cer-results.csv", lambda context: ""),
    )
    assert "csv (cer-results.csv)" in run_epilog()
    help_text = choices(build_parser(["run"]))["run"].format_help()
    assert "csv" in " ".join(help_text.split())


def test_docs_cli_names_every_report_format() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith("| `--report FORMAT")]
    named = set(re.findall(r"`([a-z]+)`", row))
    assert set(reports.FORMATS) <= named


def test_a_subcommand_line_builds_only_its_own_module() -> None:
    assert modules_for(["check", "--help"]) == ["cer.cli.check"]
    assert modules_for(["diff"]) == ["cer.cli.history"]
    everything = modules_for(None)
    assert everything == modules_for(["--help"]) == modules_for(["nonsense"])
    assert set(everything) == set(SUBCOMMANDS.values())
    assert set(choices(build_parser(["check"]))) == {"check"}


def test_every_subcommand_is_declared_by_the_module_the_table_names() -> None:
    for name, module in SUBCOMMANDS.items():
        assert name in choices(build_parser([name])), (name, module)
    assert list(choices(build_parser())) == list(SUBCOMMANDS)


MODULES_AFTER = """
import json, sys
sys.argv = ["cer", *sys.argv[1:]]
from cer.cli.entry import main
try:
    code = main()
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
sys.stderr.write(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def modules_after(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", MODULES_AFTER, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stderr.splitlines()[-1])
    assert found["code"] == 0
    return set(found["modules"])


def loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(f"{name}.") for m in modules)


def test_check_help_imports_nothing_a_run_needs() -> None:
    modules = modules_after("check", "--help")
    assert "cer.cli.check" in modules
    unneeded = (
        "cer.cli.run",
        "cer.cli.merge",
        "cer.cli.history",
        "cer.cli.review",
        "cer.cli.init",
        "cer.engine.runner",
        "cer.engine.python.workerproc",
        "cer.history",
        "cer.reports",
        "sqlite3",
    )
    assert [name for name in unneeded if loaded(modules, name)] == []


def test_the_whole_help_names_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert command_line.main([]) == 2
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert re.search(rf"^\s+{name}\s", out, re.M), name

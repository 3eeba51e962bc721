"""The worked example of a new report format: a renderer and one entry in ``FORMATS``.

It adds a CSV report (one line per case: name and status) the way a real format is
added, its renderer here instead of a module of ``cer/reports/``, and runs ``cer run
--report csv=PATH``: the command line accepts the name, the run writes the file, and
the text report on stdout is unchanged. Nothing else in cer is told about the format.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cer import reports
from cer.cli.main import main
from cer.reports import ReportFormat
from cer.reports.context import ReportContext
from support import Module, single_case_suite


def render_csv(context: ReportContext) -> str:
    """What the new format prints: only what the run reported, never a judgement."""
    lines = ["case,status"]
    lines.extend(f"{result.case_name},{result.status.value}" for result in context.run.results)
    return "\n".join(lines) + "\n"


def test_a_new_format_is_one_entry_in_the_table(
    module: Module, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(
        reports.FORMATS,
        "csv",
        ReportFormat("csv", "one line per case", "cer-results.csv", render_csv),
    )
    module.suite(single_case_suite("{ output = 2 }", "{ x = 1 }"))
    impl = module.impl("def f(x):\n    return x * 2\n")
    target = module.root / "out.csv"
    code = main(
        [
            "run",
            str(module.root / "evals.toml"),
            "--impl",
            f"{impl}:f",
            "-q",
            "--no-history",
            "--report",
            f"csv={target}",
        ]
    )
    assert code == 0
    assert target.read_text(encoding="utf-8") == "case,status\nonly,pass\n"
    assert "1 passed" in capsys.readouterr().out  # the text report as ever


def test_without_the_entry_the_name_is_refused(module: Module) -> None:
    module.suite(single_case_suite("{ output = 2 }", "{ x = 1 }"))
    with pytest.raises(SystemExit) as stopped:
        main(["run", str(module.root / "evals.toml"), "--report", f"csv={Path('x.csv')}"])
    assert stopped.value.code == 2

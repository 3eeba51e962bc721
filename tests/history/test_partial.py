"""``cer history`` says which recorded runs were partial: a run of some of the cases
(``n`` in cer-tui, ``--case``) is marked in the table and in the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cer.cli.main import main
from cer.history.records import RunRecord, Summary
from cer.reports.text import render_history

SUITE = """commonsformat_evals = "0.2"

[[cases]]
name = "doubles-one"
category = "functional"
input = { n = 1 }
expect = { value = 2 }

[[cases]]
name = "doubles-two"
category = "functional"
input = { n = 2 }
expect = { value = 4 }
"""


def _record(number: int, *, partial: bool) -> RunRecord:
    return RunRecord(
        run_id=f"run{number:04d}" + "0" * 24,
        target_module="t",
        implementation_id="m:f@abc",
        started_at_ms=1_700_000_000_000 + number * 60_000,
        completed_at_ms=1_700_000_000_000 + number * 60_000 + 10,
        summary=Summary(3, 1, 0, 2, 0),
        implementation="m:f",
        partial=partial,
    )


def test_the_table_marks_partial_runs() -> None:
    lines = render_history([_record(2, partial=True), _record(1, partial=False)], "h").splitlines()
    assert lines[1].endswith("· partial run")
    assert "partial" not in lines[2]


def test_the_json_says_which_runs_were_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "twice.py").write_text("def twice(n):\n    return 2 * n\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    history = tmp_path / "h.sqlite"
    common = ["evals.toml", "--impl", "twice:twice", "--history", str(history), "-q"]
    main(["run", *common])
    main(["run", *common, "--case", "doubles-one"])
    capsys.readouterr()
    assert main(["history", "--history", str(history), "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [run["partial"] for run in runs] == [True, False]  # newest first
    assert main(["history", "--history", str(history)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].endswith("· partial run") and not table[2].endswith("partial run")


def test_cer_diff_says_which_of_its_runs_was_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "twice.py").write_text("def twice(n):\n    return 2 * n\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    history = tmp_path / "h.sqlite"
    common = ["evals.toml", "--impl", "twice:twice", "--history", str(history), "-q"]
    main(["run", *common, "--case", "doubles-one"])
    main(["run", *common])
    capsys.readouterr()
    assert main(["diff", "--suite", "evals.toml", "--history", str(history)]) == 0
    before, after = capsys.readouterr().out.splitlines()[:2]
    assert before.startswith("from ") and before.endswith(
        ", partial run: the cases it did not run are skipped in it)"
    )
    assert after.startswith("  to ") and "partial" not in after

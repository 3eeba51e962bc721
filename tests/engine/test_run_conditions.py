"""Every run records what it ran under (docs/reports.md#run-conditions): in the closing
summary line, the JSON document, the evidence manifest and the history, and merged
shards keep them consistent."""

from __future__ import annotations

import hashlib
import json
import platform
import sqlite3
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import cer
from cer import sandbox
from cer.cli.main import main
from cer.engine import confinement
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.history.database import History
from cer.model import RunConditions, RunResult, RunSelection
from cer.reports import ReportContext, render_report
from cer.reports.manifest import manifest_document
from cer.reports.text import summary_line
from cer.results import serialize
from cer.results.merge import MergeError, Shard, merge_runs
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from reports.test_reports import validate_json

SUITE = """commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "one"
category = "functional"
input = { x = 1 }
expect = { output = 1 }

[[cases]]
name = "two"
category = "special"
input = { x = 2 }
expect = { output = 2 }
"""


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "ident.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    return tmp_path / "evals.toml"


def _run(suite_path: Path, **options: object) -> RunResult:
    return run_suite(
        load_suite(suite_path),
        RunOptions("ident:f", timeout=3.0, jobs=1, **options),  # type: ignore[arg-type]
    )


def test_a_run_records_its_conditions(suite_path: Path) -> None:
    run = _run(suite_path, isolation="none", category_models={"special": "call"})
    assert run.conditions == RunConditions(
        isolation="none",
        sandbox=confinement.decide("auto", "auto").description,
        network=confinement.decide("auto", "auto").network_description,
        timeout=3.0,
        jobs=1,
        category_remaps=(("special", "call"),),
        cer_version=cer.__version__,
        python_version=platform.python_version(),
        os=platform.system(),
        kernel=platform.release(),
        architecture=platform.machine(),
    )


def test_off_and_unavailable_say_why_there_is_no_sandbox(
    suite_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run(suite_path, sandbox="off").conditions.sandbox == "none: disabled"  # type: ignore[union-attr]
    monkeypatch.setenv(sandbox.DISABLE_ENV, "1")
    conditions = _run(suite_path).conditions
    assert conditions is not None
    assert conditions.sandbox == f"none: Landlock is unavailable ({sandbox.DISABLE_ENV} is set)"


def test_the_summary_line_names_the_sandbox(suite_path: Path) -> None:
    run = _run(suite_path, sandbox="off")
    # "special" has no model without the remap: that case is skipped.
    assert summary_line(run).endswith(
        "— incomplete · sandbox: none: disabled · network: the machine's (no network "
        "namespace: --sandbox off)"
    )


def test_the_network_in_force_is_recorded_and_says_what_is_lent(suite_path: Path) -> None:
    """The default gives the implementation a network of its own where its world is
    built; ``allow`` lends the machine's, and the record and summary line say so."""
    conditions = _run(suite_path).conditions
    assert conditions is not None
    if sandbox.status().available and sandbox.world_refused() is None:
        assert conditions.network == "loopback only (a network namespace of its own)"
    else:
        assert conditions.network.startswith("the machine's (no network namespace: ")
    lent = _run(suite_path, network="allow")
    assert lent.conditions is not None
    assert lent.conditions.network == "the machine's (lent by --network allow)"
    assert " · network: the machine's (lent by --network allow)" in summary_line(lent)


def test_json_and_manifest_carry_the_conditions(suite_path: Path) -> None:
    run = _run(suite_path, sandbox="off", category_models={"special": "call"})
    document = serialize.run_to_dict(run)
    assert document["run"]["conditions"]["sandbox"] == "none: disabled"
    assert document["run"]["conditions"]["category_remaps"] == {"special": "call"}
    assert validate_json(document, "results.schema.json") == []
    assert serialize.run_from_dict(json.loads(json.dumps(document))).conditions == run.conditions
    manifest = manifest_document(ReportContext(run, load_suite(suite_path)))
    assert manifest["run"]["conditions"] == document["run"]["conditions"]
    assert validate_json(manifest, "manifest.schema.json") == []


def test_the_history_keeps_the_conditions(suite_path: Path, tmp_path: Path) -> None:
    run = _run(suite_path, sandbox="off", category_models={"special": "call"})
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(run)
        assert history.load_run(run.run_id).conditions == run.conditions


def _shard(run: RunResult, name: str, **changes: object) -> Shard:
    assert run.conditions is not None
    return Shard(name, replace(run, conditions=replace(run.conditions, **changes)))  # type: ignore[arg-type]


def test_merged_shards_keep_their_conditions_consistent(suite_path: Path) -> None:
    one = _run(suite_path, sandbox="off", shard=(1, 2))
    two = _run(suite_path, sandbox="off", shard=(2, 2))
    merged = merge_runs([Shard("a.json", one), Shard("b.json", two)])
    assert one.conditions is not None and one.conditions.selection.shard == "1/2"
    # The merged run holds every shard: its selection is no shard's.
    assert merged.conditions == replace(one.conditions, selection=RunSelection())
    with pytest.raises(MergeError, match=r"different sandboxes \(a.json: none: disabled; "):
        merge_runs([Shard("a.json", one), _shard(two, "b.json", sandbox="landlock ABI 7")])
    merged = merge_runs([Shard("a.json", one), _shard(two, "b.json", jobs=4)])
    assert "the shards ran with different workers (a.json: 1; b.json: 4)" in merged.notes
    with pytest.raises(MergeError, match="no run conditions"):
        merge_runs([Shard("a.json", one), Shard("b.json", replace(two, conditions=None))])


# --- every condition that changes what a result means -----------------------------------


def test_the_selection_is_recorded_as_given(suite_path: Path) -> None:
    wanted = Selection(case_globs=("o*",), categories=("functional",), substrings=("n",))
    conditions = _run(suite_path, sandbox="off", selection=wanted, shard=(1, 1)).conditions
    assert conditions is not None
    assert conditions.selection == RunSelection(
        case_globs=("o*",), categories=("functional",), substrings=("n",), shard="1/1"
    )
    described = "--case 'o*' --category 'functional' -k 'n' --shard 1/1"
    assert conditions.selection.describe() == described
    named = Selection(names=frozenset({"one"}), chosen_by="--failed: last time")
    run = _run(suite_path, sandbox="off", selection=named)
    assert run.conditions is not None
    assert run.conditions.selection == RunSelection(named=1, chosen_by="--failed: last time")
    assert summary_line(run).endswith(
        "· sandbox: none: disabled · network: the machine's (no network namespace: "
        "--sandbox off) · selection: 1 named case (--failed: last time)"
    )
    whole = _run(suite_path, sandbox="off").conditions
    assert whole is not None and whole.selection.is_everything
    assert whole.selection.describe() == "every case"


def test_the_platform_and_what_was_lent_are_recorded(suite_path: Path, tmp_path: Path) -> None:
    lent = tmp_path / "lent"
    lent.mkdir()
    conditions = _run(
        suite_path, sandbox="off", paths=(str(tmp_path),), sandbox_read=(str(lent),)
    ).conditions
    assert conditions is not None
    assert (conditions.os, conditions.kernel, conditions.architecture) == (
        platform.system(),
        platform.release(),
        platform.machine(),
    )
    assert conditions.platform == f"{platform.system()} {platform.release()} {platform.machine()}"
    assert conditions.paths == (str(tmp_path),)
    assert conditions.sandbox_read == (str(lent),)
    assert conditions.network == "the machine's (no network namespace: --sandbox off)"


def _everything(suite_path: Path, tmp_path: Path) -> RunResult:
    """A run under every condition at once: a selection, lent paths, a baseline."""
    return _run(
        suite_path,
        sandbox="off",
        paths=(str(tmp_path),),
        sandbox_read=(str(suite_path),),
        selection=Selection(categories=("functional",)),
        baseline="known-failures.toml",
        baseline_sha256="ab" * 32,
        require_coverage=True,
    )


def test_every_surface_carries_every_condition(suite_path: Path, tmp_path: Path) -> None:
    run = _everything(suite_path, tmp_path)
    suite = load_suite(suite_path)
    document = serialize.run_to_dict(run)
    conditions = document["run"]["conditions"]
    assert conditions["selection"]["category"] == ["functional"]
    assert conditions["selection"]["everything"] is False
    assert (conditions["os"], conditions["architecture"]) == (platform.system(), platform.machine())
    assert conditions["paths"] == [str(tmp_path)]
    assert conditions["sandbox_read"] == [str(suite_path)]
    assert (conditions["baseline"], conditions["baseline_sha256"]) == (
        "known-failures.toml",
        "ab" * 32,
    )
    assert conditions["require_coverage"] is True
    assert validate_json(document, "results.schema.json") == []
    assert serialize.run_from_dict(json.loads(json.dumps(document))).conditions == run.conditions
    manifest = manifest_document(ReportContext(run, suite))
    assert manifest["run"]["conditions"] == conditions
    assert validate_json(manifest, "manifest.schema.json") == []
    junit = ET.fromstring(render_report("junit", ReportContext(run, suite)))
    properties = {p.get("name"): p.get("value") for p in junit.find("testsuite/properties") or ()}
    assert properties["conditions.baseline_sha256"] == "ab" * 32
    assert properties["conditions.kernel"] == platform.release()
    assert json.loads(properties["conditions.selection"] or "")["category"] == ["functional"]
    assert json.loads(properties["conditions.paths"] or "") == [str(tmp_path)]
    assert properties["conditions.require_coverage"] == "true"
    page = render_report("html", ReportContext(run, suite))
    for shown in (
        '<dt>selection</dt><dd class="mono">--category &#39;functional&#39;</dd>',
        platform.release(),
        str(tmp_path),
        f"known-failures.toml (sha256 {'ab' * 32})",
        "coverage required",
    ):
        assert shown in page, shown


def test_the_history_keeps_every_condition(suite_path: Path, tmp_path: Path) -> None:
    run = _everything(suite_path, tmp_path)
    with History.open(tmp_path / "h.sqlite") as history:
        history.record(run)
        assert history.load_run(run.run_id).conditions == run.conditions


def test_a_history_from_before_keeps_the_conditions_it_had(
    suite_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "h.sqlite"
    run = _everything(suite_path, tmp_path)
    with History.open(path) as history:
        history.record(run)
    with sqlite3.connect(path) as db:  # as an older cer recorded it: the columns only
        db.execute("DELETE FROM cer_run_conditions_full")
    with History.open(path) as history:
        conditions = history.load_run(run.run_id).conditions
    assert run.conditions is not None and conditions is not None
    assert conditions.sandbox == run.conditions.sandbox
    assert conditions.selection.is_everything and conditions.baseline == ""


def test_cer_run_records_the_baseline_its_hash_and_failed(
    suite_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = suite_path.parent
    monkeypatch.chdir(folder)
    (folder / "wrong.py").write_text("def f(x):\n    return 0\n", encoding="utf-8")
    known = folder / "known.toml"
    known.write_text(
        '[[known]]\ncase = "one"\nstatus = "fail"\nreason = "returns 0"\n', encoding="utf-8"
    )

    def run_json(*extra: str) -> dict[str, object]:
        args = ["run", "evals.toml", "--impl", "wrong:f", "--sandbox", "off", "--format", "json"]
        main([*args, "--history", str(folder / "h.sqlite"), *extra])
        document: dict[str, Any] = json.loads(capsys.readouterr().out)
        conditions: dict[str, object] = document["run"]["conditions"]
        return conditions

    held = run_json("--baseline", "known.toml")
    assert held["baseline"] == "known.toml"
    assert held["baseline_sha256"] == hashlib.sha256(known.read_bytes()).hexdigest()
    assert held["require_coverage"] is False
    selection = run_json("--failed")["selection"]
    assert isinstance(selection, dict)
    assert selection["named_cases"] == 1 and selection["everything"] is False
    assert str(selection["chosen_by"]).startswith("--failed: ")


def test_pytest_records_its_selection() -> None:
    from cer.pytest_plugin import _pytest_selection

    class Config:
        def getoption(self, name: str, default: object = None) -> object:
            return {"keyword": "not two", "markexpr": ""}.get(name, default)

    assert _pytest_selection(Config()) == "pytest -k 'not two'"  # type: ignore[arg-type]


def test_pytest_runs_name_the_cases_pytest_chose(suite_path: Path) -> None:
    from cer.pytest_plugin.suite import SuiteState, merge_process_runs

    suite = load_suite(suite_path)
    state = SuiteState(
        suite, RunOptions("ident:f", timeout=3.0, sandbox="off"), chosen_by="pytest -k 'one'"
    )
    state.run(["one"], 0)
    run = state.combined()
    assert run is not None and run.conditions is not None
    assert run.conditions.selection == RunSelection(named=1, chosen_by="pytest -k 'one'")
    other = SuiteState(suite, state.options, chosen_by="pytest -k 'one'")
    other.run(["two"], 0)
    second = other.combined()
    assert second is not None
    merged = merge_process_runs([run, second])  # two xdist workers: every case ran
    assert merged.conditions is not None and merged.conditions.selection.is_everything


def test_merge_refuses_shards_of_different_selections(suite_path: Path) -> None:
    one = _run(suite_path, sandbox="off", shard=(1, 2))
    two = _run(
        suite_path, sandbox="off", shard=(2, 2), selection=Selection(categories=("special",))
    )
    with pytest.raises(MergeError, match="different case selections"):
        merge_runs([Shard("a.json", one), Shard("b.json", two)])


def test_conditions_the_history_cannot_read_are_an_error(suite_path: Path, tmp_path: Path) -> None:
    from cer.history.records import HistoryError

    path = tmp_path / "h.sqlite"
    run = _run(suite_path, sandbox="off")
    with History.open(path) as history:
        history.record(run)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE cer_run_conditions_full SET conditions = '{not json'")
    with History.open(path) as history, pytest.raises(HistoryError, match="cannot be read back"):
        history.load_run(run.run_id)


def test_the_streamed_lines_carry_every_condition(suite_path: Path, tmp_path: Path) -> None:
    from cer.results import jsonlines

    suite = load_suite(suite_path)
    written: list[bytes] = []
    writer = jsonlines.LineWriter(written.append, suite)
    options = RunOptions(
        "ident:f",
        timeout=3.0,
        sandbox="off",
        paths=(str(tmp_path),),
        selection=Selection(case_globs=("t*",)),
        baseline="known.toml",
        baseline_sha256="cd" * 32,
    )
    run_suite(suite, options, on_event=writer)
    lines = [json.loads(line) for line in b"".join(written).splitlines()]
    header = lines[0]
    assert header["type"] == "header"
    assert header["conditions"]["selection"]["case"] == ["t*"]
    assert header["conditions"]["paths"] == [str(tmp_path)]
    assert header["conditions"]["baseline_sha256"] == "cd" * 32
    assert header["conditions"]["kernel"] == platform.release()
    for line in lines:
        assert validate_json(line, "results-lines.schema.json") == [], line
    (result,) = [line for line in lines if line.get("case_name") == "two"]
    assert result["fail_class"] is None  # a skip: "special" has no model

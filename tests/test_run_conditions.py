"""Every run records what it ran under (docs/reports.md#run-conditions): in the closing
summary line, the JSON document, the evidence manifest and the history, and merged
shards keep them consistent."""

from __future__ import annotations

import json
import platform
from dataclasses import replace
from pathlib import Path

import pytest

import cer
from cer import sandbox
from cer.cli.console import summary_line
from cer.engine import confinement
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.history.database import History
from cer.model import RunConditions, RunResult
from cer.reports import ReportContext
from cer.reports.manifest import manifest_document
from cer.results import serialize
from cer.results.merge import MergeError, Shard, merge_runs
from cer.suite.loader import load_suite
from test_reports import validate_json

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
        sandbox=confinement.decide("auto", "allow").description,
        network="allow",
        timeout=3.0,
        jobs=1,
        category_remaps=(("special", "call"),),
        cer_version=cer.__version__,
        python_version=platform.python_version(),
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
    assert summary_line(run).endswith("— incomplete · sandbox: none: disabled")


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
    assert merged.conditions == one.conditions
    with pytest.raises(MergeError, match=r"different sandboxes \(a.json: none: disabled; "):
        merge_runs([Shard("a.json", one), _shard(two, "b.json", sandbox="landlock ABI 7")])
    merged = merge_runs([Shard("a.json", one), _shard(two, "b.json", jobs=4)])
    assert "the shards ran with different workers (a.json: 1; b.json: 4)" in merged.notes
    with pytest.raises(MergeError, match="no run conditions"):
        merge_runs([Shard("a.json", one), Shard("b.json", replace(two, conditions=None))])

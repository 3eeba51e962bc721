"""``cer merge``: shard results combine into the run an unsharded run reports, or not at all.

Documents are the ``--format json`` structure (cer.reports.results_document), written
to files and read back, as CI machines would hand them over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cer.engine.options import OTHER_SHARD
from cer.model import RunResult, Status
from cer.reports import ReportContext, results_document
from cer.results import serialize
from cer.results.merge import (
    MergeError,
    Shard,
    merge_files,
    merge_runs,
    owned_results,
    read_results,
    shard_summary,
)
from cer.suite.loader import load_suite
from support import Module

SUITE_HEAD = 'commonsformat_evals = "0.2"\ntarget = "merged"\n'

IMPL = """
def f(x):
    if x % 5 == 0:
        raise ValueError(f"fifth: {x}")
    return {"output": x * 2 if x % 4 else x, "stamp": b"x", "ratio": 0.5}
"""


def suite_text(count: int = 11, extra: str = "") -> str:
    parts = [SUITE_HEAD, extra]
    for x in range(1, count + 1):
        category = "concurrency" if x == 7 else "functional"
        parts.append(
            f'[[cases]]\nname = "case-{x:02d}"\ncategory = "{category}"\n'
            f"input = {{ x = {x} }}\nexpect = {{ output = {x * 2}, ratio = 0.5 }}\n"
        )
    return "\n".join(parts)


def write_document(module: Module, run: RunResult, name: str) -> Path:
    suite = load_suite(module.root / "evals.toml")
    path = module.root / name
    path.write_text(json.dumps(results_document(ReportContext(run, suite)), indent=2))
    return path


def shards(module: Module, impl: str, count: int, **options: Any) -> list[Path]:
    return [
        write_document(
            module, module.run(impl, shard=(index, count), **options), f"shard-{index}.json"
        )
        for index in range(1, count + 1)
    ]


def essence(run: RunResult) -> list[tuple[Any, ...]]:
    return [
        (
            r.case_name,
            r.position,
            r.status,
            r.reason,
            r.stdout,
            r.stderr,
            None
            if r.observation is None
            else repr({k: v for k, v in r.observation.items() if k != "elapsed_ms"}),
            tuple(m.message for m in r.mismatches),
        )
        for r in run.results
    ]


@pytest.fixture
def impl(module: Module) -> str:
    module.suite(suite_text())
    return f"{module.impl(IMPL)}:f"


@pytest.mark.parametrize("count", [1, 2, 3, 4, 11])
def test_merged_shards_equal_the_unsharded_run(module: Module, impl: str, count: int) -> None:
    full = module.run(impl)
    merged = merge_files(shards(module, impl, count))
    assert essence(merged) == essence(full)
    assert merged.summary == full.summary
    assert merged.suite_hash == full.suite_hash
    assert merged.implementation_id == full.implementation_id
    assert merged.implementation == full.implementation
    assert not any(r.reason == OTHER_SHARD for r in merged.results)
    assert not any(note.startswith("shard ") for note in merged.notes)
    assert any("merged from" in note for note in merged.notes)


def test_merge_round_trips_through_json(module: Module, impl: str, tmp_path: Path) -> None:
    merged = merge_files(shards(module, impl, 3))
    path = tmp_path / "merged.json"
    path.write_text(serialize.dumps(merged))
    again = read_results(path)
    assert again == merged
    assert merge_runs([again]).results == merged.results


def test_merging_is_deterministic(module: Module, impl: str) -> None:
    paths = shards(module, impl, 3)
    first, second = merge_files(paths), merge_files(list(reversed(paths)))
    assert first.run_id == second.run_id
    assert first.results == second.results
    assert first.started_at_ms <= first.completed_at_ms


def test_overlap_is_refused(module: Module, impl: str) -> None:
    one, two = shards(module, impl, 2)
    with pytest.raises(MergeError, match=r"ran in more than one document.*shard-1.json"):
        merge_files([one, two, one])


def test_full_run_and_a_shard_overlap(module: Module, impl: str) -> None:
    full = write_document(module, module.run(impl), "full.json")
    one, _ = shards(module, impl, 2)
    with pytest.raises(MergeError, match="ran in more than one document"):
        merge_files([full, one])


def test_missing_shard_is_refused(module: Module, impl: str) -> None:
    one, _, three = shards(module, impl, 3)
    with pytest.raises(MergeError, match=r"4 cases ran in no document \('case-02'"):
        merge_files([one, three])


def test_mixed_suite_hashes_are_refused(module: Module, impl: str) -> None:
    one, _ = shards(module, impl, 2)
    module.suite(suite_text(extra="# the suite changed\n"))
    two = write_document(module, module.run(impl, shard=(2, 2)), "other-suite.json")
    with pytest.raises(MergeError, match=r"different suites \(suite hashes\)"):
        merge_files([one, two])


def test_mixed_implementation_sources_are_refused(module: Module) -> None:
    module.suite(suite_text())
    name = module.impl(IMPL, name="impl_same_name")
    one = write_document(module, module.run(f"{name}:f", shard=(1, 2)), "one.json")
    module.impl(IMPL + "# edited between the shards\n", name="impl_same_name")
    two = write_document(module, module.run(f"{name}:f", shard=(2, 2)), "two.json")
    with pytest.raises(MergeError, match="different implementation ids"):
        merge_files([one, two])


def test_mixed_implementations_are_refused(module: Module) -> None:
    module.suite(suite_text())
    first = module.impl(IMPL)
    second = module.impl(IMPL)
    one = write_document(module, module.run(f"{first}:f", shard=(1, 2)), "one.json")
    two = write_document(module, module.run(f"{second}:f", shard=(2, 2)), "two.json")
    with pytest.raises(MergeError, match="different implementations"):
        merge_files([one, two])


def test_a_shard_that_ran_nothing_agrees_with_any_source(module: Module) -> None:
    module.suite(suite_text(count=2))
    name = f"{module.impl(IMPL)}:f"
    paths = shards(module, name, 3)  # shard 3 of 3 has no case, so it starts no worker
    third = read_results(paths[2])
    assert "@" not in third.implementation_id
    merged = merge_files(paths)
    assert "@" in merged.implementation_id
    assert merged.summary.total == 2


def test_documents_with_other_cases_are_refused(module: Module, impl: str) -> None:
    one, two = shards(module, impl, 2)
    data = json.loads(two.read_text())
    data["results"] = data["results"][:-1]
    two.write_text(json.dumps(data))
    with pytest.raises(MergeError, match="lists other cases"):
        merge_files([one, two])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "not a cer results document"),
        ('{"format": "something-else"}', "not a cer results document"),
        ('{"format": "cer-results", "run": {}}', "not a cer results document"),
    ],
)
def test_unreadable_documents_name_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(MergeError, match=rf"bad.json: {message}"):
        merge_files([path])


def test_missing_file_and_nothing_to_merge(tmp_path: Path) -> None:
    with pytest.raises(MergeError, match="cannot read"):
        merge_files([tmp_path / "absent.json"])
    with pytest.raises(MergeError, match="nothing to merge"):
        merge_runs([])


def test_shard_summary_counts_only_its_own_cases(module: Module, impl: str) -> None:
    run = module.run(impl, shard=(2, 3))
    mine = owned_results(run)
    assert [r.position for r in mine] == [2, 5, 8, 11]
    summary = shard_summary(run)
    assert summary.total == 4
    assert summary.skipped == 0  # case 7 (unsupported) belongs to shard 1
    assert run.summary.skipped == 7
    assert {r.status for r in run.results if r.position not in (2, 5, 8, 11)} == {Status.SKIPPED}


def test_runs_can_be_merged_without_files(module: Module, impl: str) -> None:
    runs = [module.run(impl, shard=(index, 2)) for index in (1, 2)]
    merged = merge_runs([Shard("a", runs[0]), runs[1]])
    assert essence(merged) == essence(module.run(impl))

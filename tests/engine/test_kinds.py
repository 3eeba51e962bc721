"""The kinds of implementation are one table (cer.engine.kinds): the type, the options,
the keys and the backends all come from it, and a new kind is an entry and its backend.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import get_args

import pytest

from cer.config import ProjectConfig, UsageError, add_run_arguments, repro_command, resolve_run
from cer.engine import kinds
from cer.engine.execution import Execution
from cer.engine.kinds import IMPLEMENTATION_KINDS, KINDS, ImplementationKind, Kind, kind_named
from cer.engine.plan import Planned
from cer.engine.runner import run_suite
from cer.history.recall import implementation_stem
from cer.judge.verdict import Outcome, judge
from cer.model import Status
from cer.results.labels import short_label
from cer.suite.loader import load_suite


def test_the_type_and_the_table_name_the_same_kinds_in_the_same_order() -> None:
    assert get_args(ImplementationKind) == IMPLEMENTATION_KINDS == tuple(KINDS)
    assert all(name == kind.name for name, kind in KINDS.items())


def test_every_kind_has_names_of_its_own_and_a_backend_in_the_engine() -> None:
    for field in ("option", "config_key", "entry_key", "id_prefix", "backend"):
        values = [getattr(kind, field) for kind in KINDS.values()]
        assert len(set(values)) == len(values), field
    for kind in KINDS.values():
        assert kind.backend.startswith("cer.engine."), kind  # never the worker's side
        backend = kind.load_backend()
        assert isinstance(backend, type) and issubclass(backend, Execution), kind


def test_an_unknown_kind_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="kind must be one of python, command, command-per-case"):
        kind_named("wasm")


# --- a new kind: one entry in the table and its backend, nothing else ------------------


class Replay(Execution):
    """A toy backend: the implementation is a JSON file of each case's observation,
    judged as any other kind's (by :func:`cer.judge.verdict.judge`)."""

    def run(self, planned: list[Planned]) -> None:
        observed = json.loads(Path(self.options.impl).read_text(encoding="utf-8"))
        self.emit_loaded()
        for item in planned:
            self.record(judge(item.case, Outcome("returned", value=observed[item.case.name])))

    def emit_loaded(self) -> None:
        from cer.events import ImplementationLoaded

        self.implementation_id = kind_named(self.options.kind).id_stem(self.options.impl) + "@0"
        self.emit(ImplementationLoaded(self.implementation_id, (self.options.impl,)))

    def stop(self) -> None:
        pass

    def kill(self) -> None:
        pass


REPLAY = Kind(
    name="replay",  # type: ignore[arg-type]  # a real new kind joins the Literal too
    option="--impl-replay",
    metavar="OBSERVED.json",
    help="the observations recorded in OBSERVED.json, one per case name",
    summary="recorded observations",
    config_key="impl_replay",
    entry_key="replay",
    id_prefix="replay",
    python=False,
    noun="the recording",
    backend=f"{__name__}:Replay",
)

SUITE = """
commonsformat_evals = "0.2"
target = "demo"

[[cases]]
name = "doubles"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "triples"
category = "functional"
input = { x = 3 }
expect = { output = 9 }
"""


def test_a_kind_added_to_the_table_is_named_parsed_labelled_and_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(kinds.KINDS, "replay", REPLAY)  # type: ignore[index]
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    recording = tmp_path / "observed.json"
    recording.write_text(json.dumps({"doubles": {"output": 4}, "triples": {"output": 6}}))
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    args = parser.parse_args([str(tmp_path / "evals.toml"), "--impl-replay", str(recording)])
    resolved = resolve_run(args, ProjectConfig())
    options = resolved.options
    assert options.kind == "replay"
    assert resolved.labels == ("observed",) == (short_label("replay", str(recording)),)
    assert implementation_stem(options) == f"replay:{recording}"
    suite = load_suite(tmp_path / "evals.toml")
    assert "--impl-replay" in repro_command(suite.path, options, "doubles")

    run = run_suite(suite, options)
    assert [(r.case_name, r.status) for r in run.results] == [
        ("doubles", Status.PASS),
        ("triples", Status.FAIL),  # judged like any kind: never a pass it did not earn
    ]
    assert run.implementation_id == f"replay:{recording}@0"
    assert run.conditions.isolation == "process"


def test_a_kind_added_to_the_table_checks_what_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(kinds.KINDS, "replay", REPLAY)  # type: ignore[index]
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    args = parser.parse_args([str(tmp_path / "evals.toml"), "--impl-replay", ""])
    with pytest.raises(UsageError, match=r"the implementation command is empty \(--impl-replay\)"):
        resolve_run(args, ProjectConfig())

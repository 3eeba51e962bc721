"""The worker's messages and a case's result payload have one definition (cer.wire.messages),
which the worker writes and the judge reads: every kind the worker can write is one the
judge knows, and the kinds the worker treats as a crash are crashes to the judge."""

from __future__ import annotations

from typing import get_args

from cer.judge.verdict import outcome_from_worker
from cer.wire import messages as wire
from cer.wire import plaindata
from cer.wire.messages import CRASH_KINDS, PayloadKind


def _outcome(kind: str) -> str:
    payload = plaindata.dumps({"k": kind, "v": 1, "type": "E", "msg": "m", "tb": "t"})
    meta = {"op": "result", "seq": 1, "exit": {"how": "inline"}}
    outcome = outcome_from_worker(meta, payload, 1.0, 100)
    assert "unknown result kind" not in outcome.detail, kind
    return outcome.kind


def test_every_payload_kind_the_worker_writes_is_one_the_judge_reads() -> None:
    constants = {
        value for name, value in vars(wire).items() if name.isupper() and isinstance(value, str)
    }
    assert constants == set(get_args(PayloadKind))
    for kind in constants:
        _outcome(kind)


def test_the_kinds_the_worker_ends_on_are_crashes_to_the_judge() -> None:
    assert set(get_args(PayloadKind)) >= CRASH_KINDS
    for kind in CRASH_KINDS:
        assert _outcome(kind) == "crashed", kind


def test_a_kind_the_wire_does_not_define_is_lost_never_judged() -> None:
    payload = plaindata.dumps({"k": "won", "v": 1})
    meta = {"op": "result", "seq": 1, "exit": {"how": "inline"}}
    outcome = outcome_from_worker(meta, payload, 1.0, 100)
    assert (outcome.kind, outcome.detail) == ("lost", "the case sent an unknown result kind 'won'")

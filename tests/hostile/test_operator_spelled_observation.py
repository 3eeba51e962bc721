"""Approval writes data: an implementation whose observation has keys spelled like the
operators of an expect table (``output_contains = ""``, ``x_max``, ``error_includes``,
``has_fields``) cannot have them approved into the suite, where each would be judged
as its operator (``output`` containing ``""``: every string) for every implementation
that does not report the key itself, a check weaker than equality with what was
observed. The observation proposes nothing, and ``--use-observed`` refuses such an
observation on file, naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomlkit
from pytest_scaffold import write_draft

from cer.engine.options import RunOptions
from cer.judge.compare import OPERATORS
from cer.model import CaseResult, Status
from cer.review.approve import ApprovalError, approve_draft
from cer.review.drafts import drafts_path, load_drafts, set_observed
from cer.review.observe import observe, proposal_from
from cer.suite.loader import load_suite

HOSTILE = """
def evaluate(expr):
    return {"value_contains": "", "value_max": 10 ** 9, "has_fields": [], "error_includes": ""}
"""

SPELLINGS = sorted(f"value{op.name}" if op.suffix else op.name for op in OPERATORS.values())
"""Every operator of the judge's table, spelled as a key (a new operator is covered as
soon as the table has it)."""


def _observed_on_file(suite_path: Path, observed: dict[str, Any]) -> str:
    path = drafts_path(suite_path)
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    (entry,) = document["drafts"]
    entry["observed"] = observed
    entry["observed_from"] = "hostile:evaluate"
    path.write_text(document.as_string(), encoding="utf-8")
    return str(entry["name"])


@pytest.mark.parametrize("key", SPELLINGS)
def test_an_observation_with_an_operator_key_proposes_nothing(key: str) -> None:
    result = CaseResult(
        "x", "functional", "functional", Status.FAIL, "why", observation={key: "", "value": 2}
    )
    proposal, note = proposal_from(result)
    assert proposal is None
    assert note is not None and repr(key) in note and "weaker" in note


@pytest.mark.parametrize("key", SPELLINGS)
def test_use_observed_refuses_an_operator_key_on_file(tmp_path: Path, key: str) -> None:
    suite_path, _ = write_draft(tmp_path, "2")
    name = _observed_on_file(suite_path, {"value": 2, key: ""})
    before = suite_path.read_text(encoding="utf-8")
    with pytest.raises(ApprovalError, match=f"observed key '{key}' is spelled like"):
        approve_draft(suite_path, name, approver="me", use_observed=True)
    assert suite_path.read_text(encoding="utf-8") == before
    assert load_drafts(drafts_path(suite_path)).get(name).observed == {"value": 2, key: ""}


def test_the_hostile_implementation_observed_leaves_nothing_to_approve(tmp_path: Path) -> None:
    suite_path, _ = write_draft(tmp_path, "2")
    (tmp_path / "operator_keys_impl.py").write_text(HOSTILE, encoding="utf-8")
    drafts_file = drafts_path(suite_path)
    options = RunOptions(impl="operator_keys_impl:evaluate", paths=(str(tmp_path),), timeout=5.0)
    (draft,) = observe(
        load_suite(suite_path), load_drafts(drafts_file).drafts, options, options.impl
    )
    assert draft.observed is None
    assert draft.observed_note is not None and "spelled like the operator" in draft.observed_note
    set_observed(drafts_file, {draft.name: draft})
    before = suite_path.read_text(encoding="utf-8")
    with pytest.raises(ApprovalError, match="carries no observed value"):
        approve_draft(suite_path, draft.name, approver="me", use_observed=True)
    assert suite_path.read_text(encoding="utf-8") == before

"""Attacks on the guarantees around the sandbox: the pytest plugin's hold of pytest's
reports against cer's verdict, the approval of an observation, and the flaky query.
Each test here failed before the fix it stands for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomlkit

from cer.coverage import suite_coverage
from cer.model import CaseResult, Status
from cer.review.approve import ApprovalError, approve_draft
from cer.review.derive import derive
from cer.review.drafts import add_drafts, drafts_path
from cer.review.observe import proposal_from
from cer.suite.loader import load_suite

# --- approval ------------------------------------------------------------------------------

APPROVAL_SUITE = """\
commonsformat_evals = "0.2"

[[cases]]
name = "one"
category = "functional"
input = { expr = "1" }
expect = { value = 1 }
"""


def _draft_observed(folder: Path, observed: dict[str, Any]) -> tuple[Path, str]:
    """A suite, and a drafts file whose one draft has an input and ``observed``."""
    suite_path = folder / "evals.toml"
    suite_path.write_text(APPROVAL_SUITE, encoding="utf-8")
    (folder / "commonsformat.md").write_text(
        "<constraints>\n- tidy: the output is readable\n</constraints>\n", encoding="utf-8"
    )
    suite = load_suite(suite_path)
    coverage = suite_coverage(suite)
    assert coverage is not None
    path = drafts_path(suite_path)
    add_drafts(path, derive(suite, coverage).drafts)
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    (entry,) = document["drafts"]
    entry["input"] = {"expr": ""}
    entry.pop("expect", None)
    entry["observed"] = observed
    entry["observed_from"] = "calc:evaluate"
    path.write_text(document.as_string(), encoding="utf-8")
    return suite_path, str(entry["name"])


def test_the_rejection_cer_proposes_is_still_approved(tmp_path: Path) -> None:
    """cer's own proposal for a rejected input holds ``error_includes``: refusing every
    operator-spelled key refused it too, so no rejection could be approved any more."""
    result = CaseResult(
        "x",
        "functional",
        "functional",
        Status.FAIL,
        "why",
        observation={"rejects": True, "error_type": "ValueError", "error": "empty input"},
    )
    proposal, note = proposal_from(result)
    assert note is None and proposal is not None
    suite_path, name = _draft_observed(tmp_path, dict(proposal))
    approve_draft(suite_path, name, approver="me", use_observed=True)
    written = tomlkit.parse(suite_path.read_text(encoding="utf-8"))
    (case,) = [c for c in written["cases"] if c["name"] == name]
    assert dict(case["expect"]) == {
        "rejects": True,
        "error_type": "ValueError",
        "error_includes": "empty input",
    }


@pytest.mark.parametrize(
    "observed",
    [
        {"rejects": True, "error_includes": ""},  # "" is in every message
        {"rejects": True, "error_includes": "x", "value_max": 3},
        {"rejects": False, "error_includes": "x"},
    ],
)
def test_a_rejection_lookalike_is_still_refused(tmp_path: Path, observed: dict[str, Any]) -> None:
    suite_path, name = _draft_observed(tmp_path, observed)
    before = suite_path.read_text(encoding="utf-8")
    with pytest.raises(ApprovalError, match="is spelled like the operator"):
        approve_draft(suite_path, name, approver="me", use_observed=True)
    assert suite_path.read_text(encoding="utf-8") == before

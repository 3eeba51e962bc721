"""The evidence manifest: a machine-readable record of what one run showed.

It names the target (the module the suite verifies and the implementation under test,
with its fingerprint), the suite (path, content hash, format version), the case classes
present, one assertion per case (``id`` = case name, ``result``, and its origin: written
by hand or approved from a draft, by whom), the summary, constraint coverage when the
module declares constraints, and ``conformance``, which states "K of N constraints
covered" whenever constraints lack cases, so a partial suite never reads as plain
conformance. It is evidence of results and nothing more: it carries no trust or
signature claims. The fields are documented in docs/reports.md and
docs/manifest.schema.json.
"""

from __future__ import annotations

import json
from typing import Any

from cer import __version__
from cer.constraints import Coverage
from cer.history.records import ApprovalEvent
from cer.model import CASE_CLASSES, Case, Summary
from cer.reports.context import ReportContext, iso_time, suite_display_path
from cer.results import serialize
from cer.results.conformance import conformance_of
from cer.review.provenance import Provenance, case_text_hash, clean_name, read_provenance
from cer.text.safetext import for_json

__all__ = ["MANIFEST_FORMAT", "MANIFEST_VERSION", "conformance", "manifest_document", "render"]

MANIFEST_FORMAT = "cer-evidence-manifest"
MANIFEST_VERSION = 1


def conformance(summary: Summary, coverage: Coverage | None) -> str:
    """The verdict, with ``, K of N constraints covered`` when the module declares
    constraints (see :mod:`cer.results.conformance`)."""
    return conformance_of(summary, coverage).statement


def _approvals_by_case(context: ReportContext) -> dict[str, list[ApprovalEvent]] | None:
    """The suite's approval records by case name, newest first; None without history."""
    if context.approvals is None:
        return None
    found: dict[str, list[ApprovalEvent]] = {}
    for event in context.approvals:
        found.setdefault(event.case_name, []).append(event)
    return found


def _approval(
    case: Case | None,
    mark: Provenance | None,
    approvals: dict[str, list[ApprovalEvent]] | None,
) -> dict[str, Any]:
    """Who approved a case, from the approval record in the history (the comment in the
    suite file is text anyone can edit): the newest record of the case's text as it
    stands. ``approval_disagrees`` flags a case whose comment and record disagree (a
    comment no record backs, a record the comment does not show, another approver).
    Without history nothing is confirmed: ``approved_by`` is null and the comment is
    reported as the comment's claim."""
    claimed = mark is not None and mark.approved_by is not None
    comment = (
        {"by": mark.approved_by, "at": mark.approved_at} if claimed and mark is not None else None
    )
    record = None
    if case is not None and approvals is not None:
        digest = case_text_hash(case)
        record = next((e for e in approvals.get(case.name, []) if e.text_hash == digest), None)
    fields: dict[str, Any] = {
        "approved_by": None if record is None else record.approver,
        "approved_at": None if record is None else iso_time(record.approved_at_ms),
        "expectation_observed": record is not None and record.from_observation,
        "approval_comment": comment,
    }
    if approvals is not None:
        fields["approval_disagrees"] = (record is not None) != claimed or (
            record is not None
            and mark is not None
            and clean_name(record.approver) != mark.approved_by
        )
    return fields


def manifest_document(context: ReportContext) -> dict[str, Any]:
    """The manifest as JSON-ready data."""
    run, suite = context.run, context.suite
    summary = run.summary
    declared = {case.name: case for case in suite.cases}
    present = {result.case_class for result in run.results}
    fingerprint = run.implementation_id.rpartition("@")[2] if "@" in run.implementation_id else None
    origins = read_provenance(suite)
    approvals = _approvals_by_case(context)
    verdict = context.verdict()
    assertions = []
    for result in run.results:
        case = declared.get(result.case_name)
        assertion: dict[str, Any] = {
            "id": result.case_name,
            "result": result.status.value,
            "fail_class": result.fail_class,
            "case_class": result.case_class,
            "category": result.category,
            "reason": result.reason,
            "verifies": list(case.verifies) if case is not None else [],
            "line": case.line if case is not None else None,
        }
        found = None if origins is None else origins.get(result.case_name)
        assertion["origin"] = None if found is None else found.origin
        assertion.update(_approval(case, found, approvals))
        if context.flaky is not None:
            assertion["flaky"] = result.case_name in context.flaky
        assertions.append(assertion)
    return {
        "manifest": MANIFEST_FORMAT,
        "manifest_version": MANIFEST_VERSION,
        "generator": {"name": "cer", "version": __version__},
        "target": {
            "kind": "commonsformat-module",
            "name": run.target_module,
            "version": suite.target_version,
            "implementation": run.implementation or run.implementation_id.split("@")[0],
            "implementation_id": run.implementation_id,
            "fingerprint": fingerprint,
        },
        "suite": {
            "path": suite_display_path(suite),
            "sha256": run.suite_hash or suite.content_hash,
            "format": "commonsformat_evals",
            "format_version": run.format_version or suite.format_version,
        },
        "run": {
            "run_id": run.run_id,
            "started_at": iso_time(run.started_at_ms),
            "completed_at": iso_time(run.completed_at_ms),
            "notes": list(run.notes),
            "conditions": None if run.conditions is None else run.conditions.to_dict(),
        },
        "case_classes": [name for name in CASE_CLASSES if name in present],
        "assertions": assertions,
        "summary": {**serialize.summary_to_dict(summary), "verdict": verdict.word},
        "coverage": None if context.coverage is None else context.coverage.to_dict(),
        "baseline": None if verdict.baseline is None else verdict.baseline.to_dict(),
        "conformance": verdict.statement,
    }


def render(context: ReportContext) -> str:
    """The manifest as indented JSON."""
    return (
        for_json(
            json.dumps(manifest_document(context), indent=2, ensure_ascii=False, allow_nan=False)
        )
        + "\n"
    )

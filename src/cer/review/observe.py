"""Run drafts against an implementation, and read what it did as a proposed expectation.

A draft whose constraint states no expected value can still be run: the runner records
what the implementation returned or raised, and that observation becomes a *proposal*
a person may accept on purpose (``cer approve --use-observed``, or the TUI's accept
with the observed value). The proposal is never checked against anything and never
counts in a verdict; it is only data shown beside the draft.

A draft without an expectation is run with a probe expectation (the suite's value key
and ``rejects = false``), so that both a returned value and a raised exception are
observed; its status means nothing and is not reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.events import RunEvent
from cer.judge.compare import ERROR_INCLUDES, RUNNER_OBSERVED_KEYS
from cer.model import ARRAY_TO_CASE_CLASS, Case, CaseResult, RunResult, Status, Suite
from cer.review.approve import operator_spelled
from cer.review.derive import Draft, learn_shape
from cer.review.drafts import not_representable, unrepresentable_note

__all__ = ["DraftRun", "draft_case", "observe", "proposal_from", "run_drafts"]

_PROBE = "\x00cer: no expectation\x00"


@dataclass(frozen=True)
class DraftRun:
    """One draft run against an implementation."""

    draft: str
    result: CaseResult | None
    """None when the draft has no input to run."""
    probed: bool
    """Run with the probe expectation: the status says nothing about the draft."""
    proposal: Mapping[str, Any] | None
    note: str | None
    """Why there is no proposal (no input, a crash, a value TOML cannot hold)."""


def draft_case(draft: Draft, position: int, expect: Mapping[str, Any] | None = None) -> Case:
    """The draft as a case the runner can run (``expect`` replaces its own)."""
    return Case(
        name=draft.name,
        case_class=ARRAY_TO_CASE_CLASS.get(draft.array, "functional"),
        category=draft.category,
        position=position,
        array_index=position,
        input=dict(draft.input or {}),
        expect=dict(expect if expect is not None else (draft.expect or {})),
        description=draft.description,
        verifies=(draft.constraint,),
        severity=draft.severity,
    )


def proposal_from(result: CaseResult) -> tuple[Mapping[str, Any] | None, str | None]:
    """The expectation an observation proposes, or None with the reason."""
    observation = result.observation
    if observation is None:
        return None, f"nothing observed: {result.reason or result.status.value}"
    if observation.get("crashed") is True or observation.get("hung") is True:
        return None, f"nothing to propose: {result.reason or 'the implementation crashed'}"
    if result.observation_altered:
        # What is kept had a lone surrogate escaped or a large value cut: proposing it
        # would put in the suite something the implementation never returned.
        why = "it was not kept whole (a lone surrogate, or larger than cer keeps)"
        return None, unrepresentable_note(dict(observation), why)
    if observation.get("rejects") is True:
        proposal: dict[str, Any] = {"rejects": True}
        if isinstance(observation.get("error_type"), str):
            proposal["error_type"] = observation["error_type"]
        if isinstance(observation.get("error"), str) and observation["error"]:
            proposal[ERROR_INCLUDES.name] = observation["error"]
        return _written(proposal)
    own = {k: v for k, v in observation.items() if k not in RUNNER_OBSERVED_KEYS}
    if not own:
        return None, "the implementation returned nothing to compare"
    refused = operator_spelled(own)
    if refused is not None:
        return None, f"nothing to propose: {refused}"
    return _written(own)


def _written(proposal: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str | None]:
    """``proposal`` when the drafts file can hold it, else None and a note saying why
    (a lone surrogate, bytes, ...): the observation is data, it never stops a derive."""
    why = not_representable(proposal)
    if why is not None:
        return None, unrepresentable_note(proposal, why)
    return proposal, None


def run_drafts(
    suite: Suite,
    drafts: Sequence[Draft],
    options: RunOptions,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    run: Callable[..., RunResult] = run_suite,
) -> tuple[DraftRun, ...]:
    """Run every draft that has an input; those without an expectation are probed.
    ``run`` is the runner (the real one unless a test hands in another)."""
    value_key = learn_shape(suite).value_key
    runnable: list[tuple[Draft, Case, bool]] = []
    for draft in drafts:
        if draft.input is None:
            continue
        probed = not draft.expect
        expect = {value_key: _PROBE, "rejects": False} if probed else None
        runnable.append((draft, draft_case(draft, len(runnable) + 1, expect), probed))
    results: dict[str, CaseResult] = {}
    if runnable:
        scratch = replace(suite, cases=tuple(case for _, case, _ in runnable))
        done = run(scratch, options, on_event=on_event)
        results = {result.case_name: result for result in done.results}
    out = []
    probed_names = {draft.name for draft, _, probed in runnable if probed}
    for draft in drafts:
        result = results.get(draft.name)
        if result is None:
            out.append(DraftRun(draft.name, None, False, None, "no input to run"))
            continue
        proposal, note = proposal_from(result)
        if result.status is Status.SKIPPED:
            proposal, note = None, result.reason
        out.append(DraftRun(draft.name, result, draft.name in probed_names, proposal, note))
    return tuple(out)


def observe(
    suite: Suite, drafts: Sequence[Draft], options: RunOptions, source: str
) -> tuple[Draft, ...]:
    """The drafts, those without an expectation carrying the observed proposal."""
    pending = [d for d in drafts if d.input is not None and not d.expect]
    runs = {r.draft: r for r in run_drafts(suite, pending, options)}
    out = []
    for draft in drafts:
        found = runs.get(draft.name)
        if found is None:
            out.append(draft)
            continue
        out.append(
            replace(draft, observed=found.proposal, observed_from=source, observed_note=found.note)
        )
    return tuple(out)

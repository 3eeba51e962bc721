"""What the history stores of a run's evidence, within a budget.

What the implementation says (its output, its exception messages, the values it
returns) is as large as it likes, and ``cer-tui`` records every rerun: stored in full,
one short run of a chatty implementation adds a hundred megabytes to
``.cer/history.sqlite``. So each case's evidence is stored cut to a limit per field,
and each run's to a budget over all its cases; whatever is cut says so, with how much
was left out. The case's status, class, category and time are always stored whole:
they are what the history's questions (``--failed``, flaky cases, ``cer diff``) read.

The run's cases that did not pass get the budget first, in declared order, then the
passes: the evidence of a failure is what a later look at the history wants.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cer.model import Case, CaseResult, Status, captured_sections
from cer.results import serialize

__all__ = [
    "DEFAULT_HISTORY_MAX_MB",
    "JSON_LIMIT",
    "MAX_AGE_DAYS",
    "NOT_STORED_KEY",
    "REASON_LIMIT",
    "RUN_LIMIT",
    "TEXT_LIMIT",
    "StoredCase",
    "cut",
    "stored_cases",
]

TEXT_LIMIT = 16_384
"""Characters kept of a case's stdout, stderr and traceback, each."""
REASON_LIMIT = 8_192
"""Characters kept of a case's reason."""
JSON_LIMIT = 65_536
"""Characters kept of a case's observation, expect table and mismatches (as JSON)."""
VALUE_LIMIT = 4_096
"""Characters kept of the expected or observed value of one mismatch."""
RUN_LIMIT = 8 * 1024 * 1024
"""Characters of evidence kept for one run, over all its cases."""
DEFAULT_HISTORY_MAX_MB = 256
"""The history's size limit when ``[tool.cer] history_max_mb`` does not set one."""
MAX_AGE_DAYS = 90
"""Runs older than this are forgotten (the newest run of each suite is always kept)."""
NOT_STORED_KEY = "cer: not stored"
"""The one key of what stands for an observation or a table too large to store."""


def cut(text: str, limit: int, what: str = "") -> str:
    """``text`` cut to ``limit`` characters, with a line saying how much was left out."""
    if len(text) <= limit:
        return text
    return (
        f"{text[:limit]}\n[cut in the history: {len(text) - limit} more characters "
        f"past the {limit}-character limit{' for ' + what if what else ''}]"
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _not_stored(size: int, why: str) -> str:
    return _json({NOT_STORED_KEY: f"{size} characters of JSON, {why}"})


def _table_json(value: Any, limit: int = JSON_LIMIT) -> str:
    text = _json(value)
    if len(text) <= limit:
        return text
    return _not_stored(len(text), f"past the {limit}-character limit for one case")


def _short_value(value: Any) -> Any:
    text = _json(value)
    if len(text) <= VALUE_LIMIT:
        return value
    return {"$repr": cut(text, VALUE_LIMIT)}


@dataclass(frozen=True)
class StoredCase:
    """One case's evidence as the history stores it."""

    reason: str | None
    stdout: str
    stderr: str
    traceback: str | None
    observation: str | None
    expected: str | None
    mismatches: str

    @property
    def captured_output(self) -> str:
        """The named sections of :attr:`cer.model.CaseResult.captured_output`, from the
        stored (cut) streams."""
        return captured_sections(self.stdout, self.stderr, self.traceback)

    @property
    def size(self) -> int:
        """Characters stored, the streams twice (their sections in the spec's table)."""
        return len(self.captured_output) + sum(
            len(part or "")
            for part in (
                self.reason,
                self.stdout,
                self.stderr,
                self.traceback,
                self.observation,
                self.expected,
                self.mismatches,
            )
        )


def _case(result: CaseResult, case: Case | None) -> StoredCase:
    data = serialize.result_to_dict(result)
    mismatches = [
        {**m, "expected": _short_value(m["expected"]), "observed": _short_value(m["observed"])}
        for m in data["mismatches"]
    ]
    mismatches = [{**m, "message": cut(m["message"], VALUE_LIMIT)} for m in mismatches]
    expect = case.expect if case is not None else None
    return StoredCase(
        reason=None if result.reason is None else cut(result.reason, REASON_LIMIT, "a reason"),
        stdout=cut(result.stdout, TEXT_LIMIT, "stdout"),
        stderr=cut(result.stderr, TEXT_LIMIT, "stderr"),
        traceback=None
        if result.traceback is None
        else cut(result.traceback, TEXT_LIMIT, "a traceback"),
        observation=None if data["observation"] is None else _table_json(data["observation"]),
        expected=None if expect is None else _table_json(serialize.value_to_json(dict(expect))),
        mismatches=_table_json(mismatches),
    )


def _over_budget(stored: StoredCase, limit: int) -> StoredCase:
    """What is kept of a case once the run's budget is spent: its reason alone."""
    note = f"[not stored: the run's evidence passed the history's {limit}-character budget]"
    size = stored.size
    return StoredCase(
        reason=stored.reason,
        stdout=note if stored.stdout else "",
        stderr="",
        traceback=None,
        observation=None
        if stored.observation is None
        else _not_stored(size, "past the run's budget"),
        expected=None if stored.expected is None else _not_stored(size, "past the run's budget"),
        mismatches="[]",
    )


def stored_cases(
    results: Sequence[CaseResult], cases: Mapping[str, Case], limit: int = RUN_LIMIT
) -> list[StoredCase]:
    """Each result's stored evidence, in the order of ``results``: cut per field, and
    within ``limit`` characters for the run (the cases that did not pass first)."""
    stored: list[StoredCase | None] = [None] * len(results)
    order = sorted(range(len(results)), key=lambda i: (results[i].status is Status.PASS, i))
    left = limit
    for index in order:
        result = results[index]
        case = _case(result, cases.get(result.case_name))
        if case.size > left:
            case = _over_budget(case, limit)
        left -= min(left, case.size)
        stored[index] = case
    return [case for case in stored if case is not None]

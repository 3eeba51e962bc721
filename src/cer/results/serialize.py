"""Results as JSON-ready data, and back: the ``--format json`` structure.

The structure mirrors ``schema.sql`` (a run, its case results, its summary) and adds
the evidence behind each verdict: the observation and every mismatch. Values keep their
TOML types: bytes and date-times are tagged objects (``{"$bytes": ...}``), and NaN and
the infinities are ``{"$float": "nan"}`` so that the output stays strict JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from cer.model import (
    MISSING,
    CaseResult,
    Mismatch,
    RunConditions,
    RunResult,
    Status,
    Summary,
    fail_class_of,
)
from cer.wire import plaindata

FORMAT = "cer-results"
FORMAT_VERSION = 1


def _strict(value: Any) -> Any:
    """Wire data with non-finite floats replaced by tags (strict JSON has none)."""
    if type(value) is float and not math.isfinite(value):
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if type(value) is list:
        return [_strict(item) for item in value]
    if type(value) is dict:
        return {key: _strict(item) for key, item in value.items()}
    return value


def value_to_json(value: Any) -> Any:
    """A plain value (or MISSING) as strict-JSON-ready data."""
    if value is MISSING:
        return {"$missing": True}
    try:
        return _strict(plaindata.to_wire(value))
    except plaindata.NotPlainData:
        return {"$repr": repr(value)[:1000]}


def summary_to_dict(summary: Summary) -> dict[str, Any]:
    return {
        "cases_total": summary.total,
        "cases_passed": summary.passed,
        "cases_failed": summary.failed,
        "cases_skipped": summary.skipped,
        "cases_errored": summary.errored,
        "verdict": summary.verdict,
    }


def result_to_dict(result: CaseResult) -> dict[str, Any]:
    return {
        "case_name": result.case_name,
        "case_class": result.case_class,
        "category": result.category,
        "status": result.status.value,
        "fail_class": result.fail_class,
        "reason": result.reason,
        "captured_output": result.captured_output,
        "elapsed_ms": result.elapsed_ms,
        "position": result.position,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "traceback": result.traceback,
        "observation": None
        if result.observation is None
        else value_to_json(dict(result.observation)),
        "mismatches": [
            {
                "path": m.path,
                "message": m.message,
                "expected": value_to_json(m.expected),
                "observed": value_to_json(m.observed),
            }
            for m in result.mismatches
        ],
    }


def run_to_dict(run: RunResult) -> dict[str, Any]:
    """The full results structure of one run."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "run": {
            "run_id": run.run_id,
            "target_module": run.target_module,
            "implementation_id": run.implementation_id,
            "implementation": run.implementation,
            "started_at_ms": run.started_at_ms,
            "completed_at_ms": run.completed_at_ms,
            "suite_path": run.suite_path,
            "suite_hash": run.suite_hash,
            "suite_format_version": run.format_version,
            "notes": list(run.notes),
            "conditions": None if run.conditions is None else run.conditions.to_dict(),
        },
        "summary": summary_to_dict(run.summary),
        "results": [result_to_dict(result) for result in run.results],
    }


def dumps(run: RunResult, *, indent: int | None = 2) -> str:
    return json.dumps(run_to_dict(run), indent=indent, ensure_ascii=False, allow_nan=False)


def _value_from_json(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        ((key, item),) = value.items()
        if key == "$missing":
            return MISSING
        if key == "$float":
            return float(item)
        if key == "$repr":
            return item
    return plaindata.loads(json.dumps(value).encode())


def run_from_dict(data: Mapping[str, Any]) -> RunResult:
    """Rebuild a run from :func:`run_to_dict` output; ValueError when it is not one."""
    if data.get("format") != FORMAT:
        raise ValueError("not a cer results document")
    run = data["run"]
    results = []
    seen = set()
    for item in data["results"]:
        name = item["case_name"]
        if name in seen:
            raise ValueError(f"case {name!r} appears twice")
        seen.add(name)
        results.append(
            CaseResult(
                case_name=name,
                case_class=item["case_class"],
                category=item["category"],
                status=Status(item["status"]),
                reason=item.get("reason"),
                stdout=item.get("stdout", ""),
                stderr=item.get("stderr", ""),
                traceback=item.get("traceback"),
                elapsed_ms=item.get("elapsed_ms"),
                observation=None
                if item.get("observation") is None
                else _value_from_json(item["observation"]),
                mismatches=tuple(
                    Mismatch(
                        m["path"],
                        m["message"],
                        _value_from_json(m["expected"]),
                        _value_from_json(m["observed"]),
                    )
                    for m in item.get("mismatches", ())
                ),
                position=item.get("position", 0),
                fail_class=fail_class_of(item.get("fail_class")),
            )
        )
    return RunResult(
        run_id=run["run_id"],
        target_module=run["target_module"],
        implementation_id=run["implementation_id"],
        started_at_ms=run["started_at_ms"],
        completed_at_ms=run["completed_at_ms"],
        results=tuple(results),
        suite_path=run.get("suite_path", ""),
        suite_hash=run.get("suite_hash", ""),
        format_version=run.get("suite_format_version", ""),
        implementation=run.get("implementation", ""),
        notes=tuple(run.get("notes", ())),
        conditions=None
        if run.get("conditions") is None
        else RunConditions.from_dict(run["conditions"]),
    )

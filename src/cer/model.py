"""The data that crosses the core's boundaries: suites, cases, results and runs.

Everything here is a frozen value. The shapes mirror the project's ``schema.sql``
(``eval_runs``, ``eval_case_results``, ``eval_run_summary``) so that results can be
printed, serialised, recorded and compared without any knowledge of how they were made.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

CASE_CLASSES: tuple[str, ...] = ("functional", "adversarial", "generator_adversary")
"""The case classes, in the order of the schema's CHECK constraint."""

ARRAY_TO_CASE_CLASS: Mapping[str, str] = {
    "cases": "functional",
    "adversarial": "adversarial",
    "generator_adversary": "generator_adversary",
}
"""Which top-level array of tables holds which case class."""

CASE_CLASS_TO_ARRAY: Mapping[str, str] = {v: k for k, v in ARRAY_TO_CASE_CLASS.items()}


class Status(enum.StrEnum):
    """The outcome of one case; the values are the schema's ``status`` column."""

    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    ERRORED = "errored"


@dataclass(frozen=True)
class Case:
    """One case of a suite, exactly as declared in its ``evals.toml``.

    ``input`` and ``expect`` hold plain TOML data (str, int, float, bool, date/time,
    list, dict). They are never handed to an implementation: workers receive their own
    decoded copy of ``input`` and never see ``expect``.
    """

    name: str
    case_class: str
    category: str
    position: int
    """1-based position in declared order across the whole suite."""
    array_index: int
    """1-based position inside its array of tables (``[[adversarial]] #3``)."""
    input: Mapping[str, Any]
    expect: Mapping[str, Any]
    description: str | None = None
    verifies: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    severity: str | None = None
    line: int | None = None
    """1-based line of the case's ``[[...]]`` header in the suite file, when known."""

    @property
    def label(self) -> str:
        """How error messages name the case: ``[[adversarial]] #3 "name"``."""
        return f'[[{CASE_CLASS_TO_ARRAY[self.case_class]}]] #{self.array_index} "{self.name}"'


@dataclass(frozen=True)
class Suite:
    """A loaded, validated eval suite."""

    path: Path
    format_version: str
    target: str | None
    target_version: str | None
    cases: tuple[Case, ...]
    content_hash: str
    """Hex digest of the suite file's bytes; two runs of the same suite share it."""
    properties: Mapping[str, Any] = field(default_factory=dict)
    adversarial_coverage: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        """The module folder the suite sits in (fixtures live below it)."""
        return self.path.parent

    @property
    def fixtures_dir(self) -> Path:
        return self.path.parent / "fixtures"

    def case(self, name: str) -> Case:
        """The case called ``name``; raises KeyError when there is none."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)


class _Missing:
    """The value of an observation key the implementation did not report."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<missing>"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Sentinel for 'nothing was observed here', distinct from an observed ``None``."""


@dataclass(frozen=True)
class Mismatch:
    """One way in which an observation differs from an expectation.

    ``path`` locates the difference (``output[2].key``); ``message`` says it in words
    and, for strings, names the first differing line and column.
    """

    path: str
    message: str
    expected: Any = MISSING
    observed: Any = MISSING


@dataclass(frozen=True)
class CaseResult:
    """The result of one case: a row of ``eval_case_results`` plus its evidence."""

    case_name: str
    case_class: str
    category: str
    status: Status
    reason: str | None = None
    stdout: str = ""
    stderr: str = ""
    traceback: str | None = None
    elapsed_ms: int | None = None
    observation: Mapping[str, Any] | None = None
    """What the implementation reported, with runner-observed keys filled in."""
    mismatches: tuple[Mismatch, ...] = ()
    position: int = 0

    @property
    def captured_output(self) -> str:
        """Everything captured for the case, as named sections (the schema's column)."""
        sections = []
        if self.stdout:
            sections.append(f"--- stdout ---\n{self.stdout}")
        if self.stderr:
            sections.append(f"--- stderr ---\n{self.stderr}")
        if self.traceback:
            sections.append(f"--- traceback ---\n{self.traceback}")
        return "\n".join(sections)


@dataclass(frozen=True)
class Summary:
    """A row of ``eval_run_summary``; the four counts always add up to the total."""

    total: int
    passed: int
    failed: int
    skipped: int
    errored: int

    @classmethod
    def of(cls, results: tuple[CaseResult, ...] | list[CaseResult]) -> Summary:
        counts = dict.fromkeys(Status, 0)
        for result in results:
            counts[result.status] += 1
        return cls(
            total=len(results),
            passed=counts[Status.PASS],
            failed=counts[Status.FAIL],
            skipped=counts[Status.SKIPPED],
            errored=counts[Status.ERRORED],
        )

    @property
    def verdict(self) -> str:
        """``conformant`` only when every case passed; ``incomplete`` when nothing
        failed but something was skipped; ``nonconformant`` otherwise."""
        if self.failed or self.errored:
            return "nonconformant"
        if self.skipped or self.total == 0:
            return "incomplete"
        return "conformant"


@dataclass(frozen=True)
class RunConditions:
    """What a run ran under, recorded with it so that a result can be read in context:
    how cases were isolated, the sandbox (``landlock ABI 7`` or ``none: <why>``), the
    network rule, the per-case timeout, the number of workers, the categories mapped
    onto other models, and the versions of cer and Python."""

    isolation: str
    sandbox: str
    network: str
    timeout: float
    jobs: int
    category_remaps: tuple[tuple[str, str], ...] = ()
    cer_version: str = ""
    python_version: str = ""

    def to_dict(self) -> dict[str, object]:
        """The conditions as JSON-ready data (the ``conditions`` table of reports)."""
        return {
            "isolation": self.isolation,
            "sandbox": self.sandbox,
            "network": self.network,
            "timeout_s": self.timeout,
            "jobs": self.jobs,
            "category_remaps": dict(self.category_remaps),
            "cer_version": self.cer_version,
            "python_version": self.python_version,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConditions:
        """Rebuild from :meth:`to_dict`; KeyError, TypeError or ValueError otherwise."""
        remaps = data.get("category_remaps") or {}
        return cls(
            isolation=str(data["isolation"]),
            sandbox=str(data["sandbox"]),
            network=str(data["network"]),
            timeout=float(data["timeout_s"]),
            jobs=int(data["jobs"]),
            category_remaps=tuple(sorted((str(k), str(v)) for k, v in dict(remaps).items())),
            cer_version=str(data.get("cer_version", "")),
            python_version=str(data.get("python_version", "")),
        )


@dataclass(frozen=True)
class RunResult:
    """One run of a suite against one implementation: ``eval_runs`` plus its cases."""

    run_id: str
    target_module: str
    implementation_id: str
    started_at_ms: int
    completed_at_ms: int
    results: tuple[CaseResult, ...]
    suite_path: str = ""
    suite_hash: str = ""
    format_version: str = ""
    implementation: str = ""
    """What the user named (``pkg.mod:attr``), without the source hash."""
    notes: tuple[str, ...] = ()
    """Run-level facts the user must see (an import failure, a fallback)."""
    conditions: RunConditions | None = None
    """What the run ran under; None for a run recorded before conditions were."""

    @cached_property
    def summary(self) -> Summary:
        return Summary.of(self.results)

    def result(self, case_name: str) -> CaseResult:
        for result in self.results:
            if result.case_name == case_name:
                return result
        raise KeyError(case_name)

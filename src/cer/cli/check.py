"""``cer check``: validate a suite without running it.

It gathers every finding in one pass, so that a suite author fixes a file at once:
schema problems and duplicate names (from the loader), categories no execution model
runs, empty expect tables, bounds on numbers the runner does not measure (unless the
case declares them ``self_reported``), expectations that verify nothing or that no
outcome meets, inputs larger than the runner sends, missing fixtures, ``verifies``
entries naming no declared constraint, and problems in the module's ``<constraints>``
block. Errors make the check fail; warnings (a constraint with no case, a claimed
adversarial area with no case, a compared key whose value is the implementation's own
word, declared ``self_reported`` or only looking like a measurement) do not.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cer.categories import CategoryConfigError, build_registry
from cer.constraints import (
    Coverage,
    CoverageError,
    compute_coverage,
    find_module_doc,
    read_constraints,
)
from cer.engine.plan import input_bounds_reason, input_facts
from cer.judge.compare import operand_problems
from cer.judge.verdict import (
    REPORTED_NOTE,
    reported_measurements,
    unmeasured_keys,
    unmeasured_reason,
    unmeetable_problems,
    vacuous_expectations,
)
from cer.model import Case, Suite
from cer.suite.fixtures import resolve_fixtures
from cer.suite.loader import SuiteError, parse_suite

__all__ = ["CheckReport", "Finding", "SuiteUnreadable", "check_suite", "render_check"]

ERROR = "error"
WARNING = "warning"

_LOCATED = re.compile(r"^(?P<line>\d+):(?P<col>\d+): (?P<rest>.*)$", re.S)


class SuiteUnreadable(Exception):
    """The suite file cannot be read at all (missing, a folder, no permission)."""


@dataclass(frozen=True)
class Finding:
    """One problem: where (file and line when known), how bad, and what."""

    severity: str
    message: str
    file: str
    line: int | None = None

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class CheckReport:
    """Everything ``cer check`` found in one suite."""

    path: Path
    findings: tuple[Finding, ...]
    suite: Suite | None = None
    coverage: Coverage | None = None

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == WARNING)

    @property
    def ok(self) -> bool:
        return not self.errors


def check_suite(path: str | Path, category_models: Mapping[str, str] | None = None) -> CheckReport:
    """Validate the suite at ``path``; SuiteUnreadable when it cannot be read.

    ``category_models`` is ``[tool.cer.categories]``: categories it maps are known.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SuiteUnreadable(f"cannot read {path}: {exc.strerror or exc}") from exc
    name = path.name
    findings: list[Finding] = []

    def add(severity: str, message: str, line: int | None = None, file: str = name) -> None:
        findings.append(Finding(severity, message, file, line))

    try:
        suite = parse_suite(data, path)
    except SuiteError as exc:
        for problem in exc.problems:
            located = _LOCATED.match(problem)
            if located is not None:
                add(ERROR, located["rest"], int(located["line"]))
            else:
                add(ERROR, problem)
        return CheckReport(path, tuple(findings))

    for warning in suite.warnings:
        add(WARNING, warning)
    if not suite.cases:
        add(ERROR, "the suite declares no cases")

    try:
        registry = build_registry(category_models)
    except CategoryConfigError as exc:
        add(ERROR, f"[tool.cer.categories]: {exc}")
        registry = build_registry()
    known = sorted(registry.models)
    for case in suite.cases:
        if registry.model_for(case.category) is None:
            close = difflib.get_close_matches(case.category, known, n=1)
            hint = (
                f'; did you mean "{close[0]}"?'
                if close
                else ("; map it in [tool.cer.categories] if it runs like a known one")
            )
            add(
                ERROR,
                f'case "{case.name}": unknown category "{case.category}" '
                f"(it would be skipped as not supported){hint}",
                case.line,
            )
        if not case.expect:
            add(
                ERROR,
                f'case "{case.name}": the expect table is empty, so the case '
                "cannot verify anything",
                case.line,
            )
        for finding in _expect_findings(case):
            add(ERROR, finding, case.line)
        for key in reported_measurements(case.expect):
            add(
                WARNING,
                f'case "{case.name}": {key} {REPORTED_NOTE} (its outcome is the '
                "implementation's word about itself)",
                case.line,
            )
        _, missing = resolve_fixtures(dict(case.input), suite.fixtures_dir)
        for fixture in missing:
            add(
                ERROR,
                f'case "{case.name}": missing fixture "{fixture}" (looked in {suite.fixtures_dir})',
                case.line,
            )

    claimed = suite.adversarial_coverage
    present = {c.category for c in suite.cases if c.case_class == "adversarial"}
    for category in claimed:
        if category not in present:
            add(
                WARNING,
                f'adversarial_coverage claims "{category}" but no [[adversarial]] '
                "case has that category",
            )

    coverage = None
    doc = find_module_doc(path)
    if doc is not None:
        doc_name = str(doc.relative_to(path.parent)) if doc.parent == path.parent else str(doc)
        try:
            declared = read_constraints(doc)
        except CoverageError as exc:
            add(ERROR, str(exc), file=doc_name)
        else:
            for problem in declared.problems:
                line_text, sep, rest = problem.partition(": ")
                if sep and line_text.isdigit():
                    add(ERROR, rest, int(line_text), file=doc_name)
                else:
                    add(ERROR, problem, file=doc_name)
            coverage = compute_coverage(suite, declared)
            for reference in coverage.unknown:
                add(ERROR, reference.message, reference.line)
            for item in coverage.constraints:
                if not item.covered:
                    add(
                        WARNING,
                        f'constraint "{item.name}" has no case (needs a case)',
                        item.line,
                        file=doc_name,
                    )
    return CheckReport(path, tuple(findings), suite, coverage)


def _expect_findings(case: Case) -> list[str]:
    """What makes ``case`` errored whatever the implementation does: a number the runner
    does not measure and the case does not declare ``self_reported``, a malformed
    declaration, an expectation that verifies nothing or that no outcome meets, an
    input larger than the runner sends."""
    expect = case.expect
    found = []
    unmeasured = unmeasured_keys(expect)
    if unmeasured:
        found.append(
            f'case "{case.name}": {unmeasured_reason(unmeasured)} (the case would be errored)'
        )
    found += [
        f'case "{case.name}": {why} (the case would be errored)'
        for why in unmeetable_problems(expect)
    ]
    found += [
        f'case "{case.name}": {why}, so it verifies nothing (the case would be errored)'
        for why in vacuous_expectations(expect)
    ]
    found += [
        f'case "{case.name}": {why} (the case would fail whatever the implementation does)'
        for why in operand_problems(expect)
    ]
    given = dict(case.input)
    if input_facts(given)[1]:
        reason = input_bounds_reason(given).removeprefix("the case's input ")
        found.append(f'case "{case.name}": its input {reason} (the case would be errored)')
    return found


def render_check(report: CheckReport) -> str:
    """The text ``cer check`` prints: one finding a line, then a verdict line."""
    lines = [finding.render() for finding in report.findings]
    name = report.path.name
    errors, warnings = len(report.errors), len(report.warnings)
    counts = (
        f"{errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}"
    )
    if report.ok:
        cases = len(report.suite.cases) if report.suite is not None else 0
        detail = f"{cases} case{'s' if cases != 1 else ''}"
        if report.coverage is not None:
            detail += f", {report.coverage.covered} of {report.coverage.total} constraints covered"
        lines.append(f"{name}: ok ({detail}; {counts})")
    else:
        lines.append(f"{name}: {counts}")
    return "\n".join(lines) + "\n"

"""Constraint coverage: which of a module's declared constraints the suite's cases check.

A module's ``commonsformat.md`` lists its constraints in a ``<constraints>`` block, one
``- name: text`` bullet each (a bullet may wrap onto indented lines); cases name what they
check in ``verifies``. Coverage answers three questions for one suite (and, given a run,
for one run): how many constraints have at least one case, how many of those are verified
(every covering case passed), and which ``verifies`` entries name constraints that do not
exist. A misspelt name is reported as an error, never silently dropped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cer.model import RunResult, Status, Suite

__all__ = [
    "MODULE_DOC",
    "Constraint",
    "ConstraintCoverage",
    "ConstraintSet",
    "Coverage",
    "CoverageError",
    "CoverageFigures",
    "UnknownReference",
    "compute_coverage",
    "describe_unknown",
    "find_module_doc",
    "parse_constraints",
    "read_constraints",
    "read_module_doc",
    "suite_coverage",
]

MODULE_DOC = "commonsformat.md"


class _Patterns:
    """The block's patterns, compiled the first time a module document is read: a run
    beside no commonsformat.md never compiles them."""

    def __init__(self) -> None:
        self.open = re.compile(r"<constraints\s*>", re.IGNORECASE)
        self.close = re.compile(r"</constraints\s*>", re.IGNORECASE)
        self.bullet = re.compile(r"^(?P<indent>[ \t]*)[-*+][ \t]+(?P<body>.*)$")
        self.item = re.compile(
            r"""^(?:`(?P<tick>[^`]+)`|\*\*(?P<bold>[^*]+)\*\*|(?P<bare>[^\s:`*—–]+))
        [ \t]*(?::|—|–)[ \t]*(?P<text>.*)$""",
            re.VERBOSE,
        )
        self.name = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


class CoverageError(Exception):
    """The module's ``commonsformat.md`` exists but cannot be read."""


@dataclass(frozen=True)
class Constraint:
    """One declared constraint: ``- name: text`` at ``line`` of commonsformat.md."""

    name: str
    text: str
    line: int


@dataclass(frozen=True)
class ConstraintSet:
    """The constraints declared by one module document, with what was wrong in it."""

    path: Path
    constraints: tuple[Constraint, ...]
    problems: tuple[str, ...] = ()
    """``LINE: message`` findings: no block, a malformed bullet, a duplicate name."""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.constraints)


@dataclass(frozen=True)
class UnknownReference:
    """A ``verifies`` entry that names no declared constraint (a typo, usually)."""

    case_name: str
    constraint: str
    line: int | None
    suggestion: str | None = None

    @property
    def message(self) -> str:
        """``case "x" verifies unknown constraint "y" (did you mean "z"?)``."""
        text = f'case "{self.case_name}" verifies unknown constraint "{self.constraint}"'
        if self.suggestion:
            text += f' (did you mean "{self.suggestion}"?)'
        return text


@dataclass(frozen=True)
class ConstraintCoverage:
    """One constraint with the cases that check it and, after a run, their outcome."""

    name: str
    text: str
    cases: tuple[str, ...]
    verified: bool | None = None
    """Every covering case passed in the run; None when no run was given."""
    not_passed: tuple[tuple[str, str], ...] = ()
    """Covering cases that did not pass in the run, with their status."""
    line: int | None = None
    """Line of the constraint's bullet in commonsformat.md."""

    @property
    def covered(self) -> bool:
        return bool(self.cases)


@dataclass(frozen=True)
class Coverage:
    """Constraint coverage of one suite (and one run of it, when ``evaluated``)."""

    source: Path
    constraints: tuple[ConstraintCoverage, ...]
    unknown: tuple[UnknownReference, ...] = ()
    problems: tuple[str, ...] = ()
    evaluated: bool = False

    @property
    def total(self) -> int:
        return len(self.constraints)

    @property
    def covered(self) -> int:
        return sum(1 for c in self.constraints if c.covered)

    @property
    def verified(self) -> int:
        return sum(1 for c in self.constraints if c.verified)

    @property
    def needs_a_case(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.constraints if not c.covered)

    def headline(self) -> str:
        """The one-line summary ``cer run`` prints."""
        text = f"coverage: {self.covered} of {self.total} constraints covered"
        if self.evaluated:
            text += f", {self.verified} verified"
        missing = len(self.needs_a_case)
        if missing:
            text += f" · {missing} need{'s' if missing == 1 else ''} a case"
        if self.unknown:
            count = len(self.unknown)
            text += f" · {count} unknown constraint{'s' if count != 1 else ''} in verifies"
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, used by the json and manifest reports."""
        return {
            "source": str(self.source),
            "constraints_total": self.total,
            "constraints_covered": self.covered,
            "constraints_verified": self.verified if self.evaluated else None,
            "needs_a_case": list(self.needs_a_case),
            "unknown_references": [
                {
                    "case_name": u.case_name,
                    "constraint": u.constraint,
                    "line": u.line,
                    "suggestion": u.suggestion,
                }
                for u in self.unknown
            ],
            "constraints": [
                {
                    "name": c.name,
                    "text": c.text,
                    "line": c.line,
                    "cases": list(c.cases),
                    "covered": c.covered,
                    "verified": c.verified,
                }
                for c in self.constraints
            ],
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class CoverageFigures:
    """The coverage numbers a recorded run keeps, so history can show them over time.

    ``enforceable`` counts constraints a case covers or a complete draft could cover;
    ``needs_repair`` the others (see :mod:`cer.review.derive`). ``verified`` is None when the
    run's results were not judged against the constraints.
    """

    total: int
    covered: int
    verified: int | None
    enforceable: int
    needs_repair: int

    def ratio(self) -> str:
        """``6/7``: covered of total."""
        return f"{self.covered}/{self.total}"


def parse_constraints(text: str, path: Path) -> ConstraintSet:
    """Read every ``<constraints>`` block of a module document's text."""
    patterns = _patterns()
    constraints: list[Constraint] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    inside = False
    found_block = False
    current: dict[str, Any] | None = None

    def finish() -> None:
        nonlocal current
        if current is None:
            return
        name = current["name"]
        if name in seen:
            problems.append(
                f'{current["line"]}: constraint "{name}" is declared twice '
                f"(first at line {seen[name]})"
            )
        else:
            seen[name] = current["line"]
            constraints.append(Constraint(name, " ".join(current["text"]).strip(), current["line"]))
        current = None

    in_fence = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not inside:
            if not in_fence and patterns.open.search(line):
                inside = True
                found_block = True
                rest = patterns.open.split(line, maxsplit=1)[1]
                if patterns.close.search(rest):
                    inside = False
            elif line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            continue
        if patterns.close.search(line):
            finish()
            inside = False
            continue
        bullet = patterns.bullet.match(line)
        if bullet is not None and not bullet["indent"]:
            finish()
            item = patterns.item.match(bullet["body"].strip())
            name = None
            if item is not None:
                name = (item["tick"] or item["bold"] or item["bare"] or "").strip()
            if item is None or not name or not patterns.name.match(name):
                problems.append(
                    f'{number}: not a constraint bullet (expected "- name: text"): {line.strip()}'
                )
                continue
            current = {"name": name, "text": [item["text"].strip()], "line": number}
        elif not line.strip():
            continue
        elif current is not None and line[:1] in (" ", "\t"):
            current["text"].append(line.strip())
        else:
            finish()
            problems.append(f"{number}: text in <constraints> that is not a bullet: {line.strip()}")
    finish()
    if inside:
        problems.append("the <constraints> block is not closed (no </constraints>)")
    if not found_block:
        problems.append("no <constraints> block")
    return ConstraintSet(Path(path), tuple(constraints), tuple(problems))


def read_constraints(path: str | Path) -> ConstraintSet:
    """Read a module document; CoverageError when it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CoverageError(f"cannot read {path}: {exc}") from exc
    return parse_constraints(text, path)


def find_module_doc(suite_path: str | Path) -> Path | None:
    """The ``commonsformat.md`` of the module a suite belongs to (beside the suite)."""
    candidate = Path(suite_path).parent / MODULE_DOC
    return candidate if candidate.is_file() else None


def compute_coverage(
    suite: Suite, declared: ConstraintSet, run: RunResult | None = None
) -> Coverage:
    """Coverage of ``declared`` by the suite's cases, judged by ``run`` when given."""
    known = set(declared.names)
    covering: dict[str, list[str]] = {name: [] for name in declared.names}
    unknown: list[UnknownReference] = []
    for case in suite.cases:
        for name in dict.fromkeys(case.verifies):
            if name in known:
                covering[name].append(case.name)
                continue
            import difflib  # only for a name no constraint has: the suggestion

            close = difflib.get_close_matches(name, declared.names, n=1, cutoff=0.6)
            unknown.append(
                UnknownReference(case.name, name, case.line, close[0] if close else None)
            )
    statuses: Mapping[str, Status] = {}
    if run is not None:
        statuses = {r.case_name: r.status for r in run.results}
    items = []
    for constraint in declared.constraints:
        cases = tuple(covering[constraint.name])
        verified: bool | None = None
        not_passed: tuple[tuple[str, str], ...] = ()
        if run is not None:
            not_passed = tuple(
                (name, statuses[name].value if name in statuses else "missing")
                for name in cases
                if statuses.get(name) is not Status.PASS
            )
            verified = bool(cases) and not not_passed
        items.append(
            ConstraintCoverage(
                constraint.name, constraint.text, cases, verified, not_passed, constraint.line
            )
        )
    return Coverage(
        source=declared.path,
        constraints=tuple(items),
        unknown=tuple(unknown),
        problems=declared.problems,
        evaluated=run is not None,
    )


def read_module_doc(suite: Suite) -> ConstraintSet | None:
    """The constraints of the module beside the suite, read now; None when it has no
    commonsformat.md. Raises CoverageError when the document cannot be read.

    A run reads this once, before the implementation runs, and judges coverage on that
    snapshot with :func:`suite_coverage`: the implementation could rewrite the file while
    it runs, and must not decide which constraints it is judged against.
    """
    doc = find_module_doc(suite.path)
    if doc is None:
        return None
    return read_constraints(doc)


def suite_coverage(
    suite: Suite, run: RunResult | None = None, declared: ConstraintSet | None = None
) -> Coverage | None:
    """Coverage for the module beside the suite; None when it has no commonsformat.md.

    ``declared`` is the snapshot :func:`read_module_doc` took before the run; without
    it the document is read now. Raises CoverageError when it cannot be read.
    """
    if declared is None:
        declared = read_module_doc(suite)
        if declared is None:
            return None
    return compute_coverage(suite, declared, run)


def describe_unknown(reference: UnknownReference, suite_name: str) -> str:
    """``evals.toml:12: case "x" verifies unknown constraint "y" (did you mean "z"?)``."""
    where = f"{suite_name}:{reference.line}" if reference.line else suite_name
    return f"{where}: {reference.message}"

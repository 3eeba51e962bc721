"""Known-failure baselines: the cases a team knows still fail, checked both ways.

A baseline file (``known-failures.toml``, given with ``--baseline`` or ``baseline`` in
``[tool.cer]``) lists ``[[known]]`` entries: a case name or glob, the status it is
expected to have (``fail`` or ``errored``), why, and optionally a link and the
implementation the entry is for. :func:`check_run` holds a run against it:

- a listed case that fails as listed is a *known failure*;
- a case that fails or errors and is not listed, or is listed with the other status,
  is a *regression*;
- a listed case that now passes is *stale*: the entry must go, so the list only
  shrinks by a deliberate edit;
- an entry that names no case of the suite is an error (:func:`unmatched_entries`).

Known failures never make a run conformant: they are counted in the verdict
(:mod:`cer.results.conformance`). :func:`update_baseline` rewrites the file from a run with
tomlkit, keeping reasons and comments, and adds entries only when asked.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cer.engine.kinds import guess_kind
from cer.model import CaseResult, RunResult, Status, Suite
from cer.results.labels import short_label
from cer.results.merge import owned_results

__all__ = [
    "BASELINE_STATUSES",
    "Baseline",
    "BaselineCheck",
    "BaselineEntry",
    "BaselineError",
    "BaselineUpdate",
    "KnownFailure",
    "Regression",
    "StaleEntry",
    "check_run",
    "implementation_names",
    "load_baseline",
    "never_ran",
    "unmatched_entries",
    "update_baseline",
]

BaselineStatus = Literal["fail", "errored"]
BASELINE_STATUSES: tuple[BaselineStatus, ...] = ("fail", "errored")
_KEYS = frozenset({"case", "status", "reason", "link", "implementation"})
_HEADER = re.compile(r"^\s*\[\[\s*known\s*\]\]\s*(#.*)?$")
_GLOB = re.compile(r"[*?\[]")
EXAMPLE = '[[known]]\ncase = "tabs-*"\nstatus = "fail"\nreason = "tabs are not expanded yet"'


class BaselineError(Exception):
    """The baseline file cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class BaselineEntry:
    """One ``[[known]]`` entry of a baseline file."""

    case: str
    """A case name, or a shell-style glob (``tabs-*``) when no case has this name."""
    status: BaselineStatus
    reason: str
    link: str | None = None
    implementation: str | None = None
    """The implementation the entry is for (its label, or the name it was given by),
    or None for every implementation."""
    line: int | None = None
    """The line of the entry's ``[[known]]`` header."""
    index: int = 0
    """Its place among the file's entries, from 0."""

    def matches(self, name: str, names: frozenset[str]) -> bool:
        """Whether the entry names the case ``name`` (of a suite whose names are
        ``names``): by its exact name, or as a glob when no case has the entry's name."""
        if self.case == name:
            return True
        return (
            self.case not in names
            and _GLOB.search(self.case) is not None
            and fnmatch.fnmatchcase(name, self.case)
        )

    def applies_to(self, implementation: Iterable[str]) -> bool:
        """Whether the entry is for an implementation known by any of these names."""
        return self.implementation is None or self.implementation in set(implementation)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "status": self.status,
            "reason": self.reason,
            "link": self.link,
            "implementation": self.implementation,
            "line": self.line,
        }


@dataclass(frozen=True)
class Baseline:
    """A baseline file as read: its path and entries, in file order."""

    path: Path
    entries: tuple[BaselineEntry, ...]
    sha256: str = ""
    """The SHA-256 of the file's bytes as read, hex (the run's conditions record it)."""

    def where(self, entry: BaselineEntry) -> str:
        """``known-failures.toml:12`` for messages."""
        return f"{self.path}:{entry.line}" if entry.line else str(self.path)

    def entry_for(
        self, name: str, names: frozenset[str], implementation: Iterable[str] = ()
    ) -> BaselineEntry | None:
        """The entry that lists the case ``name`` for this implementation: one naming it
        exactly before any glob, then the first in file order."""
        aliases = tuple(implementation)
        applying = [e for e in self.entries if e.applies_to(aliases) and e.matches(name, names)]
        exact = [e for e in applying if e.case == name]
        found = exact or applying
        return found[0] if found else None


def _header_lines(text: str) -> list[int]:
    """The line numbers of the ``[[known]]`` headers, in order."""
    return [number for number, line in enumerate(text.splitlines(), 1) if _HEADER.match(line)]


def load_baseline(path: str | Path) -> Baseline:
    """Read and check a baseline file; BaselineError naming the file and line."""
    source = Path(path)
    try:
        data_bytes = source.read_bytes()
        text = data_bytes.decode("utf-8")
    except FileNotFoundError:
        raise BaselineError(
            f"{source}: no such baseline file (create one with "
            "`cer baseline update --add-new` after a run)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{source}: cannot read it: {exc}") from None
    try:
        import tomli
    except ImportError:  # pragma: no cover - tomli is a dependency
        import tomllib as tomli  # type: ignore[no-redef]
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise BaselineError(f"{source}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"known"})
    if unknown:
        raise BaselineError(
            f"{source}: unknown top-level keys {', '.join(unknown)}; a baseline holds only "
            f"[[known]] entries, e.g.\n{EXAMPLE}"
        )
    raw = data.get("known", [])
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise BaselineError(f"{source}: known must be an array of tables ([[known]] entries)")
    lines = _header_lines(text)
    if len(lines) != len(raw):
        lines = []  # entries written some other way (an inline array): no line numbers
    entries = []
    seen: dict[tuple[str, str | None], BaselineEntry] = {}
    for index, item in enumerate(raw):
        line = lines[index] if lines else None
        entry = _entry(item, index, line, source)
        key = (entry.case, entry.implementation)
        if key in seen:
            first = seen[key]
            raise BaselineError(
                f"{_where(source, line, index)}: case {entry.case!r} is already listed "
                f"at {_where(source, first.line, first.index)}"
            )
        seen[key] = entry
        entries.append(entry)
    return Baseline(source, tuple(entries), hashlib.sha256(data_bytes).hexdigest())


def _where(source: Path, line: int | None, index: int) -> str:
    return f"{source}:{line}" if line else f"{source}: entry {index + 1}"


def _entry(item: Mapping[str, Any], index: int, line: int | None, source: Path) -> BaselineEntry:
    where = _where(source, line, index)
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise BaselineError(
            f"{where}: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})"
        )
    for key in ("case", "status", "reason"):
        if key not in item:
            raise BaselineError(f"{where}: the entry has no {key}; e.g.\n{EXAMPLE}")
    for key in _KEYS:
        if key in item and not isinstance(item[key], str):
            raise BaselineError(f"{where}: {key} must be a string, got {item[key]!r}")
    if not item["case"].strip():
        raise BaselineError(f"{where}: case is empty")
    status = item["status"]
    if status not in BASELINE_STATUSES:
        raise BaselineError(
            f"{where}: status must be fail or errored, got {status!r} (a passing case "
            "has no place in a baseline)"
        )
    if not item["reason"].strip():
        raise BaselineError(f"{where}: reason is empty: say why the case is known to fail")
    return BaselineEntry(
        case=item["case"],
        status=status,
        reason=item["reason"],
        link=item.get("link"),
        implementation=item.get("implementation"),
        line=line,
        index=index,
    )


def unmatched_entries(baseline: Baseline, suite: Suite) -> tuple[str, ...]:
    """One message per entry that names no case of the suite (a renamed or removed
    case, a typo): ``known-failures.toml:12: case "x" names no case of evals.toml``."""
    names = frozenset(case.name for case in suite.cases)
    problems = []
    for entry in baseline.entries:
        if any(entry.matches(name, names) for name in names):
            continue
        what = "matches" if _GLOB.search(entry.case) else "names"
        message = f"{baseline.where(entry)}: case {entry.case!r} {what} no case of {suite.path}"
        import difflib  # only for a name that matches nothing: the suggestion

        close = difflib.get_close_matches(entry.case, sorted(names), n=1, cutoff=0.6)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        problems.append(message)
    return tuple(problems)


NOT_RUN = "not run: "
"""How the runner's own reason for a case it never ran begins (an implementation that
could not be loaded, a command that could not start, a run stopped early)."""


def never_ran(result: CaseResult) -> bool:
    """Whether ``result`` is the runner's ``not run: <cause>``: the case errored without
    the implementation ever being asked it, so that no entry can list it as a known
    failure (an entry says how the implementation fails the case, not that it could not
    be loaded). A reason of the implementation's always starts otherwise (``the
    implementation raised …``)."""
    return result.status is Status.ERRORED and (result.reason or "").startswith(NOT_RUN)


def implementation_names(
    run: RunResult, label: str | None = None, others: Iterable[str] = ()
) -> tuple[str, ...]:
    """The names an entry's ``implementation`` may use for the run's implementation:
    its label, the implementation as given, and its automatic short label. ``others``
    are the labels of the other implementations run beside it (a matrix): a name that
    is one of them names that implementation only, never this one too (``calc`` is the
    column ``calc``, not also ``calc-2``, the module ``calc``)."""
    names = [label] if label else []
    given = run.implementation or run.implementation_id.split("@")[0]
    if given:
        names.extend([given, short_label(guess_kind(given).name, given)])
    taken = frozenset(others) - {label}
    return tuple(name for name in dict.fromkeys(names) if name not in taken)


@dataclass(frozen=True)
class KnownFailure:
    """A listed case that failed (or errored) as its entry says."""

    case_name: str
    status: BaselineStatus
    entry: BaselineEntry


@dataclass(frozen=True)
class Regression:
    """A case that failed or errored without an entry saying so: unlisted, or listed
    with the other status (``listed`` is then that entry)."""

    case_name: str
    status: BaselineStatus
    listed: BaselineEntry | None = None
    ran: bool = True
    """False for a case the runner never ran (:func:`never_ran`), listed or not."""

    @property
    def why(self) -> str:
        """``not in the baseline``, ``listed as fail, now errored`` or ``listed as
        errored, but it was not run``."""
        if self.listed is None:
            return "not in the baseline"
        if not self.ran:
            return f"listed as {self.listed.status}, but it was not run"
        return f"listed as {self.listed.status}, now {self.status}"


@dataclass(frozen=True)
class StaleEntry:
    """A listed case that passed: its entry must be removed from the baseline."""

    case_name: str
    entry: BaselineEntry


@dataclass(frozen=True)
class BaselineCheck:
    """One run held against a baseline."""

    path: str
    known: tuple[KnownFailure, ...] = ()
    regressions: tuple[Regression, ...] = ()
    stale: tuple[StaleEntry, ...] = ()
    not_run: tuple[str, ...] = ()
    """Listed cases the run did not run (skipped, deselected): neither known nor stale."""

    @property
    def clean(self) -> bool:
        """No regression and no stale entry: the run failed only as the file says."""
        return not self.regressions and not self.stale

    def phrase(self) -> str:
        """``12 known failures, no regressions`` (and ``, 1 stale baseline entry``):
        what the verdict says about the baseline."""
        parts = []
        if self.known:
            parts.append(_count(len(self.known), "known failure"))
        parts.append(
            _count(len(self.regressions), "regression") if self.regressions else "no regressions"
        )
        if self.stale:
            parts.append(_count(len(self.stale), "stale baseline entry", "stale baseline entries"))
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, the same in the results, the manifest and the reports."""
        return {
            "path": self.path,
            "known_failures": [
                {"case_name": k.case_name, "status": k.status, **_entry_fields(k.entry)}
                for k in self.known
            ],
            "regressions": [
                {
                    "case_name": r.case_name,
                    "status": r.status,
                    "listed_as": None if r.listed is None else r.listed.status,
                }
                for r in self.regressions
            ],
            "stale": [{"case_name": s.case_name, **_entry_fields(s.entry)} for s in self.stale],
            "not_run": list(self.not_run),
        }


def _entry_fields(entry: BaselineEntry) -> dict[str, Any]:
    return {
        "entry": entry.case,
        "reason": entry.reason,
        "link": entry.link,
        "line": entry.line,
    }


def _count(number: int, word: str, plural: str | None = None) -> str:
    return f"{number} {word if number == 1 else (plural or word + 's')}"


def check_run(
    baseline: Baseline,
    suite: Suite,
    run: RunResult,
    label: str | None = None,
    others: Iterable[str] = (),
) -> BaselineCheck:
    """Hold ``run`` against ``baseline``. Entries for another implementation (named by
    ``label`` or :func:`implementation_names`, ``others`` being the labels of the
    implementations run beside it) are left out; cases left to another shard count
    nowhere, and other skipped cases are ``not_run``."""
    names = frozenset(case.name for case in suite.cases)
    aliases = implementation_names(run, label, others)
    known: list[KnownFailure] = []
    regressions: list[Regression] = []
    stale: list[StaleEntry] = []
    not_run: list[str] = []
    for result in owned_results(run):
        entry = baseline.entry_for(result.case_name, names, aliases)
        if result.status is Status.SKIPPED:
            if entry is not None:
                not_run.append(result.case_name)
            continue
        if result.status is Status.PASS:
            if entry is not None:
                stale.append(StaleEntry(result.case_name, entry))
            continue
        status: BaselineStatus = "fail" if result.status is Status.FAIL else "errored"
        if never_ran(result):
            regressions.append(Regression(result.case_name, status, entry, ran=False))
        elif entry is not None and entry.status == status:
            known.append(KnownFailure(result.case_name, status, entry))
        else:
            regressions.append(Regression(result.case_name, status, entry))
    return BaselineCheck(
        str(baseline.path), tuple(known), tuple(regressions), tuple(stale), tuple(not_run)
    )


@dataclass(frozen=True)
class BaselineUpdate:
    """What :func:`update_baseline` did, or would do: the new text and the changes."""

    text: str
    removed: tuple[str, ...] = ()
    """Entries removed: every case they named now passes."""
    narrowed: tuple[str, ...] = ()
    """Glob entries replaced by the cases they name that still fail."""
    added: tuple[str, ...] = ()
    """Cases added (``add_new``)."""
    changed: tuple[str, ...] = ()
    """Entries whose status was changed to the observed one (``add_new``)."""
    refused: tuple[str, ...] = ()
    """Regressions left out because ``add_new`` was not given."""


def update_baseline(
    path: str | Path,
    suite: Suite,
    run: RunResult,
    *,
    add_new: bool = False,
    label: str | None = None,
) -> BaselineUpdate:
    """The baseline file's new text after ``run``: stale entries removed, glob entries
    that now name passing cases narrowed to the cases still failing (with the same
    reason), and, with ``add_new``, the regressions added or re-statused. Reasons,
    links and comments of the kept entries are kept (tomlkit). Entries for another
    implementation, and cases the run did not run, are left alone. A missing file is
    created only with ``add_new``."""
    import tomlkit  # only this command rewrites a baseline

    source = Path(path)
    if source.exists():
        baseline = load_baseline(source)
        text = source.read_text(encoding="utf-8")
    elif add_new:
        baseline = Baseline(source, ())
        text = (
            "# Cases known to fail, each with why. `cer run --baseline` fails on any other\n"
            "# failure, and on an entry whose case now passes (remove it).\n"
        )
    else:
        raise BaselineError(f"{source}: no such baseline file (--add-new creates it)")
    problems = unmatched_entries(baseline, suite)
    if problems:
        raise BaselineError(problems[0])
    document = tomlkit.parse(text)
    check = check_run(baseline, suite, run, label)
    statuses = {r.case_name: r.status for r in owned_results(run)}
    names = frozenset(case.name for case in suite.cases)
    failing = {(k.case_name, k.entry.index) for k in check.known}
    stale_entries = {s.entry.index for s in check.stale}
    tables: list[Any] = list(document.get("known", []))
    kept: list[Any] = []
    removed: list[str] = []
    narrowed: list[str] = []
    changed: list[str] = []
    regressions = {r.case_name: r for r in check.regressions}
    for entry, table in zip(baseline.entries, tables, strict=True):
        if entry.index not in stale_entries:
            if add_new and entry.case in regressions and regressions[entry.case].listed is entry:
                table["status"] = regressions.pop(entry.case).status
                changed.append(entry.case)
            kept.append(table)
            continue
        matched = [name for name in sorted(names, key=_order(suite)) if entry.matches(name, names)]
        if any(name not in statuses for name in matched):
            kept.append(table)  # some of its cases did not run: nothing to decide on
            continue
        still = [name for name in matched if (name, entry.index) in failing]
        if entry.case in names or not still:
            removed.append(entry.case)
            continue
        narrowed.append(entry.case)
        for name in still:
            new = tomlkit.table()
            new["case"] = name
            for key in ("status", "reason", "link", "implementation"):
                if key in table:
                    new[key] = table[key]
            new.comment(f"was {entry.case}")
            kept.append(new)
    added: list[str] = []
    refused: list[str] = []
    for name, regression in regressions.items():
        if not add_new:
            refused.append(f"{name} ({regression.why})")
            continue
        listed = regression.listed
        new = tomlkit.table()
        new["case"] = name
        new["status"] = regression.status
        if listed is not None:
            new["reason"] = listed.reason
            if listed.link is not None:
                new["link"] = listed.link
        else:
            new["reason"] = f"failing since run {run.run_id[:8]}: say why, or fix it"
        implementation = listed.implementation if listed is not None else label
        if implementation:
            new["implementation"] = implementation
        kept.append(new)
        added.append(name)
    array = tomlkit.aot()
    for table in kept:
        array.append(table)
    if "known" in document:
        del document["known"]
    if kept:
        document["known"] = array
    return BaselineUpdate(
        tomlkit.dumps(document),
        tuple(removed),
        tuple(narrowed),
        tuple(added),
        tuple(changed),
        tuple(refused),
    )


def _order(suite: Suite) -> Any:
    positions = {case.name: index for index, case in enumerate(suite.cases)}
    return lambda name: positions.get(name, len(positions))


def describe_update(update: BaselineUpdate) -> Sequence[str]:
    """One line per change, for ``cer baseline update``'s report."""
    lines = [f"removed (now passes): {name}" for name in update.removed]
    lines += [f"narrowed to the cases still failing: {name}" for name in update.narrowed]
    lines += [f"added: {name}" for name in update.added]
    lines += [f"status changed: {name}" for name in update.changed]
    lines += [f"not added (a regression; --add-new adds it): {name}" for name in update.refused]
    return lines

"""The data that crosses the core's boundaries: suites, cases, results and runs.

Everything here is a frozen value. The shapes mirror the project's ``schema.sql``
(``eval_runs``, ``eval_case_results``, ``eval_run_summary``) so that results can be
printed, serialised, recorded and compared without any knowledge of how they were made.
"""

from __future__ import annotations

import enum
import marshal
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from itertools import repeat
from pathlib import Path
from typing import Any, Literal, cast, get_args

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


FailClass = Literal[
    "mismatch",
    "raised",
    "timed_out",
    "crashed",
    "exited",
    "not_plain",
    "signature",
    "unverifiable",
    "lost",
    "not_run",
]
"""Why a case failed or errored, in one machine-readable word (a result's
``fail_class``), decided by the supervisor from what it observed itself, never taken
from the implementation's words:

``mismatch``
    the case ran and what was observed differs from the expectation (a fail);
``raised``
    the implementation raised an exception that no expectation of the case covers;
``timed_out``
    the case did not answer within its timeout;
``crashed``
    the case's process was killed by a signal, or the implementation raised a
    BaseException, ran out of memory or let an exception escape a thread;
``exited``
    the case's process (or the harness) exited, with a non-zero status or without a
    result;
``not_plain``
    it returned something that is not plain data, or too much of it;
``signature``
    the implementation could not be called with the case's input;
``unverifiable``
    what the case asks cannot be verified (an empty or vacuous expect table, a
    measurement cer does not take, a crash it did not see, keys only the runner
    observes reported by the implementation);
``lost``
    the runner got no usable answer (a corrupted or malformed result, a broken
    protocol, a worker that vanished, a harness that could not run the case);
``not_run``
    the case was never given to the implementation (it could not be loaded or
    started, the input cannot be sent, a fixture is missing, restarts ran out).

A pass or a skip carries none (its reason says why a case was skipped).
"""

FAIL_CLASSES: tuple[FailClass, ...] = get_args(FailClass)
"""Every :data:`FailClass`, in the order the documentation lists them."""


def fail_class_of(value: object) -> FailClass | None:
    """``value`` as a fail class when it is one (read back from a document or the
    history); None for anything else (a document from before classes were recorded)."""
    for known in FAIL_CLASSES:
        if value == known:
            return known
    return None


SELF_REPORTED = "self_reported"
"""The declaration in a case's ``expect`` naming the keys whose values the suite means as
the implementation's own figures (``self_reported = ["count"]``). The loader refuses one
that is not a non-empty array of key names; the judge (an operator that compares
nothing, in :data:`cer.judge.compare.OPERATORS`) and ``cer check`` hold what it names
against the case: a bound on any key but a measurement the runner makes cannot be
verified otherwise (:func:`cer.judge.verdict.unmeasured_keys`)."""


@dataclass(frozen=True, slots=True)
class Case:
    """One case of a suite, exactly as declared in its ``evals.toml``.

    ``input`` and ``expect`` hold plain TOML data (str, int, float, bool, date/time,
    list, dict). They are never handed to an implementation: workers receive their own
    decoded copy of ``input`` and never see ``expect``.

    A loaded suite keeps each case's ``input`` and ``expect`` packed (their ``marshal``
    bytes, see :func:`build_cases`) and decodes them on every read: a 100,000-case suite
    then holds a few hundred bytes a case instead of the parser's kilobytes of
    dictionaries and strings. Each read returns a fresh copy, so no caller can change
    the suite by changing what it was given.
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


CASE_FIELDS: tuple[str, ...] = tuple(item.name for item in fields(Case))
"""The fields of a :class:`Case`, in declaration order: the order of the columns that
:func:`build_cases` takes."""

_SLOTS: dict[str, Any] = {name: vars(Case)[name] for name in CASE_FIELDS}
"""Each field's slot descriptor: it stores a value without ``__setattr__``."""


def _packed_table(name: str) -> property:
    """The ``input`` or ``expect`` attribute: the stored table, or the packed one decoded.

    Plain ``bytes`` in the slot are a packed table (a mapping is never bytes); the setter
    that ``__init__`` goes through refuses bytes, so only :func:`build_cases` packs.
    """
    slot = _SLOTS[name]
    read_slot = slot.__get__
    write_slot = slot.__set__
    loads = marshal.loads

    def read(case: Case) -> Mapping[str, Any]:
        value = read_slot(case, Case)
        if type(value) is bytes:
            table: Mapping[str, Any] = loads(value)
            return table
        return value  # type: ignore[no-any-return]

    def write(case: Case, value: Mapping[str, Any]) -> None:
        if isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"a case's {name} must be a table, not bytes")
        write_slot(case, value)

    return property(read, write, doc=f"The case's {name} table (a fresh copy on every read).")


for _name in ("input", "expect"):
    setattr(Case, _name, _packed_table(_name))


_DEFINITION = tuple(
    _SLOTS[name].__get__
    for name in CASE_FIELDS
    if name not in ("name", "position", "array_index", "line")
)


def same_definition(case: Case, other: Case) -> bool:
    """Whether two cases are declared alike, wherever they sit in their files: the
    same class, category, input, expect, description, constraints, tags and severity
    (packed tables compared as packed, without decoding them; a table a load could
    not pack, because it holds a TOML date or time, compared as TOML declares it, by
    :func:`same_value`, where ``==`` would take ``1``, ``1.0`` and ``true`` for one)."""
    for read in _DEFINITION:
        mine, theirs = read(case, Case), read(other, Case)
        if mine is theirs:
            continue
        if type(mine) in _PLAIN_FIELD_TYPES:
            if type(theirs) is not type(mine) or mine != theirs:
                return False
        elif not same_value(mine, theirs):
            return False
    return True


_PLAIN_FIELD_TYPES = frozenset({bytes, str, type(None)})
"""The stored fields of a case that ``==`` compares as declared: packed tables, text."""


def same_value(a: object, b: object) -> bool:
    """Whether two parsed TOML values are declared alike: the same types throughout,
    tables with the same keys in the same order, and scalars with the same ``repr``
    (``1``, ``1.0`` and ``true`` differ, as ``0.0`` and ``-0.0``, and a date-time's
    offset counts), unlike ``==``."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):  # a table, whatever holds it
        return list(a) == list(b) and all(map(same_value, a.values(), b.values()))
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(same_value, a, b))
    return a is b or repr(a) == repr(b)


def pack_table(table: Mapping[str, Any]) -> bytes | Mapping[str, Any]:
    """``table`` packed for :func:`build_cases`: its ``marshal`` bytes, or the table
    itself when it holds a value ``marshal`` cannot (a TOML date or time)."""
    try:
        return marshal.dumps(cast(Any, table))
    except ValueError:
        return table


def build_cases(columns: Sequence[Sequence[Any]]) -> list[Case]:
    """Cases from columns of already validated field values, one column per name of
    :data:`CASE_FIELDS` in that order, all of one length.

    The ``input`` and ``expect`` columns may hold packed tables (:func:`pack_table`).
    Each column is stored with one C-level loop over the cases; building 100,000 cases
    through ``__init__`` (twelve ``object.__setattr__`` calls each) would cost more than
    validating them.
    """
    count = len(columns[0])
    if any(len(column) != count for column in columns):
        raise ValueError("the columns of a case table differ in length")
    cases: list[Case] = list(map(object.__new__, repeat(Case, count)))
    for name, column in zip(CASE_FIELDS, columns, strict=True):
        deque(map(_SLOTS[name].__set__, cases, column), maxlen=0)
    return cases


def case_columns(cases: Sequence[Case]) -> list[tuple[Any, ...]]:
    """The columns :func:`build_cases` takes back into equal cases, with packed tables
    left packed (the suite cache writes these)."""
    getters = [_SLOTS[name].__get__ for name in CASE_FIELDS]
    return [tuple(map(get, cases)) for get in getters]


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
    def target_module(self) -> str:
        """What the suite verifies, as runs record it: its ``target``, else the name of
        the module folder (resolved, so that a bare ``evals.toml`` names the working
        directory), else the suite file's stem. Never empty."""
        if self.target:
            return self.target
        try:
            folder = self.directory.resolve().name
        except OSError:
            folder = self.directory.name
        return folder or self.path.stem or "suite"

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


def captured_sections(stdout: str, stderr: str, traceback: str | None) -> str:
    """A case's captured streams as named sections (the schema's ``captured_output``),
    the ones that hold anything, in a fixed order."""
    sections = []
    if stdout:
        sections.append(f"--- stdout ---\n{stdout}")
    if stderr:
        sections.append(f"--- stderr ---\n{stderr}")
    if traceback:
        sections.append(f"--- traceback ---\n{traceback}")
    return "\n".join(sections)


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The result of one case: a row of ``eval_case_results`` plus its evidence.

    A run holds one of these a case until it ends (100,000 of them for a suite the size
    of test262), so it is kept compact: its fields in slots, its texts shared with the
    case (name, class, category) or the empty string, and its ``observation`` packed
    (its ``marshal`` bytes, decoded on every read: see :func:`_packed_observation`),
    which holds the few hundred bytes of a small observation instead of the kilobyte
    of its dictionaries. What a reader gets is the same value, a fresh copy each time.
    """

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
    observation_altered: bool = False
    """Whether ``observation`` is not exactly what was observed: what is kept of a result
    had a lone surrogate escaped or a large value cut (:func:`cer.text.safetext.retained`).
    The verdict was made on the whole value; a proposal cannot be."""
    fail_class: FailClass | None = None
    """Why a failed or errored case did (:data:`FailClass`), as the supervisor decided
    it; None for a pass, a skip, and a result read from before classes were recorded."""

    @property
    def captured_output(self) -> str:
        """Everything captured for the case, as named sections (the schema's column)."""
        return captured_sections(self.stdout, self.stderr, self.traceback)


OBSERVATION_SLOT: Any = vars(CaseResult)["observation"]
"""The slot that holds a result's observation as stored (packed or not), under the
property that decodes it."""


def _packed_observation() -> property:
    """The ``observation`` attribute of :class:`CaseResult`: stored packed as its
    ``marshal`` bytes when ``marshal`` takes it whole, else as given, and decoded on
    every read.

    ``marshal`` writes only the exact built-in types (a subclass of ``str`` or ``dict``,
    a TOML date, :data:`MISSING` are refused) and reads them back equal, type for type
    (``True`` stays a bool, ``-0.0`` and NaN stay floats), so a packed observation reads
    back as the value that was stored. Bytes are never an observation (it is a mapping
    or None), so bytes in the slot always mean packed.
    """
    slot = OBSERVATION_SLOT
    read_slot = slot.__get__
    write_slot = slot.__set__
    loads = marshal.loads
    dumps = marshal.dumps

    def read(result: CaseResult) -> Mapping[str, Any] | None:
        value = read_slot(result, CaseResult)
        if type(value) is bytes:
            table: Mapping[str, Any] = loads(value)
            return table
        return value  # type: ignore[no-any-return]

    def write(result: CaseResult, value: Mapping[str, Any] | None) -> None:
        if isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError("a result's observation must be a table, not bytes")
        packed: object = value
        if type(value) is dict and value:
            try:
                packed = dumps(value)
            except ValueError:  # a value marshal does not write: kept as it is
                packed = value
            else:
                # A table that does not read back equal (a NaN, equal to itself only as
                # the same object) is kept as given, so results compare as they did.
                if loads(packed) != value:
                    packed = value
        write_slot(result, packed)

    return property(
        read,
        write,
        doc="What the implementation reported, with runner-observed "
        "keys filled in (a fresh copy on every read).",
    )


CaseResult.observation = _packed_observation()  # type: ignore[assignment,misc]


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
class ImplementationOrigin:
    """An implementation's name and version, and where they were read: ``distribution``
    (the installed distribution's metadata, for a Python module that belongs to one) or
    ``harness`` (what a command harness declared itself, in its own words). Both are
    text from the implementation's side: shown escaped, never believed of anything."""

    name: str
    version: str
    source: Literal["distribution", "harness"]

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "source": self.source}


@dataclass(frozen=True)
class RunSelection:
    """Which cases a run was asked to run, as its conditions record it: a run of part
    of a suite says which part, so that its results are never read as the whole's.

    The filters are the options as given (``--case``, ``--category``, ``--class``,
    ``--tag``, ``-k``); ``named`` counts the cases a front end chose by name (``--failed``,
    a rerun or the run pattern of cer-tui, pytest's own selection) and ``chosen_by``
    says how; ``shard`` is ``I/N`` for a run of one shard (``--shard``)."""

    case_globs: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    substrings: tuple[str, ...] = ()
    named: int | None = None
    """How many case names the run was limited to; None when it was not."""
    chosen_by: str = ""
    """How the named cases were chosen (``--failed: ...``, ``run pattern "x"``)."""
    shard: str = ""

    @property
    def is_everything(self) -> bool:
        """Whether the run was asked to run every case of the suite."""
        return self == RunSelection()

    def describe(self) -> str:
        """The selection in words, as the options were given (``every case`` when
        there was none)."""
        if self.is_everything:
            return "every case"
        words: list[str] = []
        for option, values in (
            ("--case", self.case_globs),
            ("--category", self.categories),
            ("--class", self.classes),
            ("--tag", self.tags),
            ("-k", self.substrings),
        ):
            words.extend(f"{option} {value!r}" for value in values)
        if self.named is not None:
            plural = "" if self.named == 1 else "s"
            named = f"{self.named} named case{plural}"
            words.append(f"{named} ({self.chosen_by})" if self.chosen_by else named)
        if self.shard:
            words.append(f"--shard {self.shard}")
        return " ".join(words)

    def to_dict(self) -> dict[str, object]:
        return {
            "everything": self.is_everything,
            "case": list(self.case_globs),
            "category": list(self.categories),
            "class": list(self.classes),
            "tag": list(self.tags),
            "k": list(self.substrings),
            "named_cases": self.named,
            "chosen_by": self.chosen_by,
            "shard": self.shard or None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSelection:
        """Rebuild from :meth:`to_dict`; TypeError or ValueError otherwise."""

        def words(key: str) -> tuple[str, ...]:
            return tuple(str(item) for item in data.get(key) or ())

        named = data.get("named_cases")
        return cls(
            case_globs=words("case"),
            categories=words("category"),
            classes=words("class"),
            tags=words("tag"),
            substrings=words("k"),
            named=None if named is None else int(named),
            chosen_by=str(data.get("chosen_by") or ""),
            shard=str(data.get("shard") or ""),
        )


@dataclass(frozen=True)
class RunConditions:
    """What a run ran under, recorded with it so that a result can be read in context:
    how cases were isolated, the sandbox (``landlock ABI 7`` or ``none: <why>``), the
    network rule, the per-case timeout, the number of workers, the categories mapped
    onto other models, the versions of cer and Python, how the memory of cases was
    measured (``memory``: empty when no case asked about it), and every other condition
    that changes what a result means: the selection, the platform, what was lent to the
    implementation (``paths``, ``sandbox_read``), the baseline held against and whether
    coverage was required. Paths are shown as the user gave them: local data of the
    user's own, not the implementation's."""

    isolation: str
    sandbox: str
    network: str
    timeout: float
    jobs: int
    category_remaps: tuple[tuple[str, str], ...] = ()
    cer_version: str = ""
    python_version: str = ""
    memory: str = ""
    category_plugins: tuple[tuple[str, str], ...] = ()
    """Category → the installed plugin (``cer.categories`` entry point) that ran its
    cases, with its version: that package, not the runner, decided them."""
    selection: RunSelection = field(default_factory=RunSelection)
    """Which cases the run was asked to run."""
    os: str = ""
    """The operating system (``Linux``), as :func:`platform.system` names it."""
    kernel: str = ""
    """The kernel's release (``6.8.0-45-generic``): the sandbox depends on it."""
    architecture: str = ""
    """The machine's architecture (``x86_64``)."""
    paths: tuple[str, ...] = ()
    """The folders lent to the implementation's import (``--path``)."""
    sandbox_read: tuple[str, ...] = ()
    """What the sandboxed implementation was lent to read (``--sandbox-read``)."""
    baseline: str = ""
    """The known-failures file the verdict was held against (``--baseline``), or empty."""
    baseline_sha256: str = ""
    """The SHA-256 of that file's bytes as read, hex."""
    require_coverage: bool = False
    """Whether an uncovered constraint fails the run (``--require-coverage``)."""

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
            "memory": self.memory,
            "category_plugins": dict(self.category_plugins),
            "selection": self.selection.to_dict(),
            "os": self.os,
            "kernel": self.kernel,
            "architecture": self.architecture,
            "paths": list(self.paths),
            "sandbox_read": list(self.sandbox_read),
            "baseline": self.baseline or None,
            "baseline_sha256": self.baseline_sha256 or None,
            "require_coverage": self.require_coverage,
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
            memory=str(data.get("memory", "")),
            category_plugins=tuple(
                sorted(
                    (str(k), str(v)) for k, v in dict(data.get("category_plugins") or {}).items()
                )
            ),
            selection=RunSelection.from_dict(dict(data.get("selection") or {})),
            os=str(data.get("os") or ""),
            kernel=str(data.get("kernel") or ""),
            architecture=str(data.get("architecture") or ""),
            paths=tuple(str(p) for p in data.get("paths") or ()),
            sandbox_read=tuple(str(p) for p in data.get("sandbox_read") or ()),
            baseline=str(data.get("baseline") or ""),
            baseline_sha256=str(data.get("baseline_sha256") or ""),
            require_coverage=data.get("require_coverage") is True,
        )

    @property
    def platform(self) -> str:
        """The platform in one line (``Linux 6.8.0 x86_64``); empty when not recorded."""
        return " ".join(part for part in (self.os, self.kernel, self.architecture) if part)


@dataclass(frozen=True)
class SourceAccess:
    """Which of the implementation's files cer may read on its behalf (a code frame, an
    editor jump), and how: a file name in a traceback is the implementation's claim,
    so only a file the supervisor itself checked and hashed as loaded by the import
    (or by a case) is read, and with the rights the implementation had."""

    files: tuple[str, ...]
    """The files the implementation id covers, as the supervisor checked them."""
    confined_reader: tuple[str, ...] = ()
    """The command prefix that runs a program under the run's sandbox (ending in
    ``--``); empty when the implementation ran without one, with the user's rights."""


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
    origin: ImplementationOrigin | None = field(default=None, compare=False)
    """What the implementation is, by name and version, where that can be told: the
    installed distribution its module belongs to, or what a command harness declared
    itself. Untrusted text from the implementation's side; not written to the results
    document, so it takes no part in comparing two results."""
    source_access: SourceAccess | None = field(default=None, compare=False)
    """Which implementation files a code frame may show (None: not known, none). A
    handle of this process for reading source, not a finding of the run: it is never
    written to a report, so it takes no part in comparing two results."""

    @cached_property
    def summary(self) -> Summary:
        return Summary.of(self.results)

    def result(self, case_name: str) -> CaseResult:
        for result in self.results:
            if result.case_name == case_name:
                return result
        raise KeyError(case_name)

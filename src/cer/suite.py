"""Read an ``evals.toml`` file into a validated, frozen :class:`~cer.model.Suite`.

The loader reports every problem of a suite at once, so that a suite author can fix a
file in one pass, and it keeps the cases in the order the file declares them, because
results, reports and recorded runs are all compared in that order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import gc
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from itertools import repeat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from cer.model import ARRAY_TO_CASE_CLASS, Case, Suite

try:
    import tomli as _toml
except ImportError:  # pragma: no cover - tomli is a declared dependency
    import tomllib as _toml  # type: ignore[no-redef]

__all__ = [
    "SUPPORTED_VERSIONS",
    "SuiteError",
    "load_suite",
    "parse_suite",
    "resolve_fixtures",
]

SUPPORTED_VERSIONS: tuple[str, ...] = ("0.1", "0.2")
"""The ``commonsformat_evals`` versions this runner reads, oldest first."""

FIXTURE_SCHEME = "fixture://"
"""Prefix of an input string that names a file in the module's ``fixtures/`` folder."""

_CASE_ARRAYS: tuple[str, ...] = tuple(ARRAY_TO_CASE_CLASS)
_TOP_LEVEL_KEYS: tuple[str, ...] = (
    "commonsformat_evals",
    "target",
    "target_version",
    *_CASE_ARRAYS,
    "properties",
    "adversarial_coverage",
)
"""Every top-level key the format defines; any other is refused, never skipped, so that
a misspelt array (``[[case]]``) cannot make its cases vanish from a run."""
_CASE_KEYS: frozenset[str] = frozenset(
    ("name", "category", "input", "expect", "description", "verifies", "tags", "severity")
)
"""Every field a case may hold; any other is refused (``expects`` would otherwise leave
the case with nothing to verify, and a misspelt ``input`` would run it on nothing)."""
_LOCATED = re.compile(r"^\d+:\d+: ")
_TOML_LOCATION = re.compile(r"^(?P<msg>.*?) \(at line (?P<line>\d+), column (?P<col>\d+)\)$", re.S)

_CASE_FIELDS = frozenset(
    {
        "name",
        "case_class",
        "category",
        "position",
        "array_index",
        "input",
        "expect",
        "description",
        "verifies",
        "tags",
        "severity",
        "line",
    }
)
_CASE_IS_PLAIN = (
    frozenset(field.name for field in dataclasses.fields(Case)) == _CASE_FIELDS
    and "__slots__" not in vars(Case)
    and not hasattr(Case, "__post_init__")
)

_ARRAY_NAMES = "|".join(_CASE_ARRAYS)
_CASE_HEADER_LINE = re.compile(
    rf"""\n[ \t]*+\[\[[ \t]*+(?P<q>["']?)(?P<name>{_ARRAY_NAMES})(?P=q)[ \t]*+\]\]"""
)
# One token of a valid TOML document, for the careful scan. Strings and comments are
# consumed whole so that nothing inside them is mistaken for a header; the order of the
# alternatives matters (triple quotes before single quotes). The text is scanned with a
# newline in front so that every line, the first included, starts with one.
_TOKEN = re.compile(
    rf"""
      \n[ \t]*+
      (?:
          (?P<header>\[\[[ \t]*+(?P<hq>["']?)(?P<hname>{_ARRAY_NAMES})(?P=hq)[ \t]*+\]\])
        | (?P<inline>(?P<iq>["']?)(?P<iname>{_ARRAY_NAMES})(?P=iq)[ \t]*+=[ \t]*+\[)
        | (?P<table>\[)
      )
    | \"\"\"(?:[^"\\]++|\\[\s\S]|\"{{1,2}}+(?!\"))*+\"{{3,5}}
    | '''[\s\S]*?'{{3,5}}
    | "[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"
    | '[^'\n]*+'
    | \#[^\n]*+
    """,
    re.VERBOSE,
)


class SuiteError(Exception):
    """A suite file that cannot be used, with every problem found in it.

    ``problems`` are the individual findings without the file name; ``str()`` lists
    them one per line, each prefixed with the file name, ready to print to a user.
    """

    def __init__(self, path: Path, problems: Iterable[str]) -> None:
        self.path = Path(path)
        self.problems: tuple[str, ...] = tuple(problems)
        super().__init__(self.path, self.problems)

    def __str__(self) -> str:
        name = self.path.name or str(self.path)
        lines = []
        for problem in self.problems:
            separator = ":" if _LOCATED.match(problem) else ": "
            lines.append(f"{name}{separator}{problem}")
        return "\n".join(lines)


def load_suite(path: str | Path) -> Suite:
    """Read and validate the suite file at ``path``.

    An unreadable file raises :class:`SuiteError` with the operating system's reason,
    so that callers can report it like any other suite problem.
    """
    suite_path = Path(path)
    try:
        data = suite_path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SuiteError(suite_path, (f"cannot read {suite_path}: {reason}",)) from None
    return parse_suite(data, suite_path)


def parse_suite(text: str | bytes, path: Path) -> Suite:
    """Build a :class:`Suite` from the contents of a suite file.

    ``path`` is where the contents came from; it names the file in messages and locates
    the fixtures folder. Raises :class:`SuiteError` listing every problem found.
    """
    path = Path(path)
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    content_hash = hashlib.sha256(raw).hexdigest()
    if isinstance(text, str):
        source = text
    else:
        try:
            source = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SuiteError(
                path, (f"not valid UTF-8 (byte {exc.start} cannot be decoded)",)
            ) from None
    source = source.removeprefix("\ufeff")

    with _collector_paused():
        try:
            document = _toml.loads(source)
        except _toml.TOMLDecodeError as exc:
            raise SuiteError(path, (_describe_toml_error(exc, source),)) from None
        except RecursionError:
            raise SuiteError(
                path, ("invalid TOML: values are nested too deeply to read",)
            ) from None
        try:
            return _build_suite(document, source, path, content_hash)
        except RecursionError:
            raise SuiteError(path, ("values are nested too deeply to read",)) from None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off while a suite is turned into objects.

    Parsing a large suite allocates millions of containers, none of them garbage yet;
    letting the collector walk them again and again adds about a third to the loading
    time. The collector's previous state is restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def resolve_fixtures(value: Any, fixtures_dir: Path) -> tuple[Any, tuple[str, ...]]:
    """Copy ``value`` with every ``fixture://NAME`` string replaced by a file path.

    The replacement is the absolute path of ``fixtures_dir / NAME``. The second item
    lists, once each and in order of appearance, the names that are not existing files;
    a name that would leave the fixtures folder (absolute, or holding ``..``) is listed
    too and left unreplaced, so that no path outside the folder is ever handed on.
    """
    missing: list[str] = []
    resolved = _resolve(value, Path(fixtures_dir), missing)
    return resolved, tuple(missing)


def _resolve(value: Any, fixtures_dir: Path, missing: list[str]) -> Any:
    """Recursive step of :func:`resolve_fixtures`; appends bad names to ``missing``."""
    if isinstance(value, str):
        if not value.startswith(FIXTURE_SCHEME):
            return value
        name = value[len(FIXTURE_SCHEME) :]
        if not _is_safe_fixture_name(name):
            if name not in missing:
                missing.append(name)
            return value
        target = os.path.abspath(fixtures_dir / name)
        if not os.path.isfile(target) and name not in missing:
            missing.append(name)
        return target
    if isinstance(value, dict):
        return {key: _resolve(item, fixtures_dir, missing) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, fixtures_dir, missing) for item in value]
    if isinstance(value, tuple):
        return tuple(_resolve(item, fixtures_dir, missing) for item in value)
    return value


def _is_safe_fixture_name(name: str) -> bool:
    """Whether ``name`` is a relative path that stays inside the fixtures folder."""
    if not name.strip() or "\x00" in name:
        return False
    for flavour in (PurePosixPath(name), PureWindowsPath(name)):
        if flavour.is_absolute() or flavour.anchor or ".." in flavour.parts:
            return False
    return True


def _describe_toml_error(exc: ValueError, source: str) -> str:
    """Turn a TOML decoding error into ``LINE:COL: invalid TOML: reason``."""
    message = str(exc)
    line = getattr(exc, "lineno", None)
    column = getattr(exc, "colno", None)
    reason = getattr(exc, "msg", None)
    match = _TOML_LOCATION.match(message)
    if match is not None:
        reason = reason or match["msg"]
        line = line or int(match["line"])
        column = column or int(match["col"])
    if message.endswith("(at end of document)"):
        reason = reason or message.removesuffix(" (at end of document)")
        if line is None or column is None:
            line = source.count("\n") + 1
            column = len(source) - (source.rfind("\n") + 1) + 1
    if isinstance(line, int) and isinstance(column, int):
        return f"{line}:{column}: invalid TOML: {reason or message}"
    return f"invalid TOML: {reason or message}"


def _build_suite(document: dict[str, Any], source: str, path: Path, content_hash: str) -> Suite:
    """Validate the parsed document and assemble the suite, or raise every problem."""
    problems: list[str] = []
    warnings: list[str] = []

    format_version = _negotiate_version(document, path, problems)
    target = _optional_string(document, "target", problems)
    target_version = _optional_string(document, "target_version", problems)

    properties: Mapping[str, Any] = {}
    raw_properties = document.get("properties")
    if raw_properties is not None:
        if isinstance(raw_properties, dict):
            properties = raw_properties
        else:
            problems.append("properties must be a table")

    coverage: tuple[str, ...] = ()
    raw_coverage = document.get("adversarial_coverage")
    if raw_coverage is not None:
        if not isinstance(raw_coverage, dict):
            problems.append("adversarial_coverage must be a table")
        elif "categories" in raw_coverage:
            categories = raw_coverage["categories"]
            if _is_string_list(categories):
                coverage = tuple(categories)
            else:
                problems.append("adversarial_coverage.categories must be a list of strings")

    for key in document:
        if key not in _TOP_LEVEL_KEYS:
            problems.append(_unknown_top_level(key, document[key], source))

    present = [name for name in _CASE_ARRAYS if name in document]
    counts = {name: len(document[name]) for name in present if isinstance(document[name], list)}
    order, header_lines = _scan_layout(source, counts)

    entries: list[tuple[str, int, Any, int | None]] = []
    for array in [name for name in order if name in present] + [
        name for name in present if name not in order
    ]:
        values = document[array]
        if not isinstance(values, list):
            problems.append(f"[[{array}]] must be an array of tables, not {_type_name(values)}")
            continue
        lines: list[int | None] = list(header_lines.get(array, ()))
        if len(lines) != len(values):
            lines = [None] * len(values)
        entries.extend(
            (array, index, entry, line)
            for index, (entry, line) in enumerate(zip(values, lines, strict=True), start=1)
        )
    if all(line is not None for array, _, _, line in entries if array in header_lines):
        # Every header was found: the file's own order, across interleaved arrays. An
        # array written inline (``cases = [...]``) is a top-level key, so it sits before
        # every header; the sort is stable, and such arrays keep their place in front.
        entries.sort(key=lambda item: 0 if item[3] is None else item[3])

    cases: list[Case] = []
    first_seen: dict[str, tuple[int, str, int]] = {}
    for position, (array, index, entry, line) in enumerate(entries, start=1):
        case_class = ARRAY_TO_CASE_CLASS[array]
        case = _build_case(entry, case_class, index, position, line)
        if case is not None:
            cases.append(case)
            name: Any = case.name
        else:
            problems.extend(_case_problems(entry, array, index, line))
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name.strip():
                continue
        earlier = first_seen.setdefault(name, (position, array, index))
        if earlier[0] != position:
            first_position, first_array, first_index = earlier
            problems.append(
                f'[[{array}]] #{index} "{name}" (position {position}): duplicate name, '
                f"already used by [[{first_array}]] #{first_index} "
                f"(position {first_position})"
            )
    position = len(entries)

    if problems:
        raise SuiteError(path, problems)
    if position == 0:
        warnings.append("the suite declares no cases")

    return Suite(
        path=path,
        format_version=format_version,
        target=target,
        target_version=target_version,
        cases=tuple(cases),
        content_hash=content_hash,
        properties=properties,
        adversarial_coverage=coverage,
        warnings=tuple(warnings),
    )


def _negotiate_version(document: Mapping[str, Any], path: Path, problems: list[str]) -> str:
    """The suite's format version; an unknown one stops reading at once."""
    newest = SUPPORTED_VERSIONS[-1]
    if "commonsformat_evals" not in document:
        supported = ", ".join(f'"{known}"' for known in SUPPORTED_VERSIONS)
        problems.append(
            "commonsformat_evals is missing: the suite must say which format version it "
            f'is written in, e.g. commonsformat_evals = "{newest}" at the top '
            f"(this runner reads versions {supported})"
        )
        return newest
    version = document["commonsformat_evals"]
    if not isinstance(version, str):
        problems.append(
            f"commonsformat_evals must be a string such as {SUPPORTED_VERSIONS[-1]!r}, "
            f"not {_type_name(version)}"
        )
        return newest
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(f'"{known}"' for known in SUPPORTED_VERSIONS)
        raise SuiteError(
            path,
            (
                f'unsupported commonsformat_evals version "{version}"; '
                f"this runner reads versions {supported}",
            ),
        )
    return version


def _build_case(
    entry: Any, case_class: str, index: int, position: int, line: int | None
) -> Case | None:
    """The case an entry of a case array declares, or None when the entry has problems.

    This is the fast path every case of a large suite takes; :func:`_case_problems`
    explains a refusal.
    """
    if not isinstance(entry, dict) or not entry.keys() <= _CASE_KEYS:
        return None
    get = entry.get
    name = get("name")
    category = get("category")
    input_ = get("input")
    expect = get("expect")
    description = get("description")
    severity = get("severity")
    verifies = get("verifies")
    tags = get("tags")
    if not (
        isinstance(name, str)
        and name.strip()
        and isinstance(category, str)
        and category.strip()
        and (input_ is None or isinstance(input_, dict))
        and (expect is None or isinstance(expect, dict))
        and (description is None or isinstance(description, str))
        and (severity is None or isinstance(severity, str))
        and (verifies is None or _is_string_list(verifies))
        and (tags is None or _is_string_list(tags))
    ):
        return None
    return _new_case(
        {
            "name": name,
            "case_class": case_class,
            "category": category,
            "position": position,
            "array_index": index,
            "input": {} if input_ is None else input_,
            "expect": {} if expect is None else expect,
            "description": description,
            "verifies": () if verifies is None else tuple(verifies),
            "tags": () if tags is None else tuple(tags),
            "severity": severity,
            "line": line,
        }
    )


def _new_case(fields: dict[str, Any]) -> Case:
    """A :class:`Case` with exactly these (already validated) field values.

    The generated ``__init__`` of a frozen dataclass sets each field through
    ``object.__setattr__``, which makes it the largest cost of loading a suite of tens of
    thousands of cases; filling the instance dictionary directly builds an equal object
    about ten times faster. It is done only while ``Case`` is a plain dataclass whose
    fields are the ones given here, and the ordinary constructor is used otherwise.
    """
    if _CASE_IS_PLAIN:
        case: Case = object.__new__(Case)
        case.__dict__.update(fields)
        return case
    return Case(**fields)


def _case_problems(entry: Any, array: str, index: int, line: int | None) -> list[str]:
    """Every problem of an entry that :func:`_build_case` refused, in field order."""
    if not isinstance(entry, dict):
        return [f"[[{array}]] #{index} must be a table, not {_type_name(entry)}"]
    problems: list[str] = []
    name = entry.get("name")
    label = f"[[{array}]] #{index}"
    if isinstance(name, str) and name.strip():
        label += f' "{name}"'
    for key in entry:
        if key not in _CASE_KEYS:
            where = f" (line {line})" if line is not None else ""
            problems.append(
                f"{label}{where}: unknown field {key!r}{_did_you_mean(key, _CASE_KEYS)}; "
                f"a case holds only {', '.join(sorted(_CASE_KEYS))}"
            )

    for key in ("name", "category"):
        value = entry.get(key)
        if key not in entry:
            problems.append(f"{label}: {key} is required")
        elif not (isinstance(value, str) and value.strip()):
            problems.append(f"{label}: {key} must be a non-empty string")
    for key in ("input", "expect"):
        value = entry.get(key, {})
        if not isinstance(value, dict):
            problems.append(f"{label}: {key} must be a table, not {_type_name(value)}")
    for key in ("description", "severity"):
        value = entry.get(key, "")
        if not isinstance(value, str):
            problems.append(f"{label}: {key} must be a string, not {_type_name(value)}")
    for key in ("verifies", "tags"):
        if not _is_string_list(entry.get(key, [])):
            problems.append(f"{label}: {key} must be a list of strings")
    return problems


def _unknown_top_level(key: str, value: Any, source: str) -> str:
    """The problem of a top-level key the format does not define, located and with the
    nearest known key as a suggestion."""
    line = _top_level_line(key, source)
    where = f"{line}:1: " if line is not None else ""
    if _is_array_of_tables(value):
        hint = difflib.get_close_matches(key, _CASE_ARRAYS, n=1)
        suggestion = f"; did you mean [[{hint[0]}]]?" if hint else ""
        return (
            f"{where}unknown array of tables [[{key}]] ({len(value)} "
            f"{'entry' if len(value) == 1 else 'entries'}); its cases would not run"
            f"{suggestion} (the case arrays are [[cases]], [[adversarial]] and "
            "[[generator_adversary]])"
        )
    return (
        f"{where}unknown top-level key {key!r}{_did_you_mean(key, _TOP_LEVEL_KEYS)}; "
        f"the format defines {', '.join(_TOP_LEVEL_KEYS)}"
    )


def _top_level_line(key: str, source: str) -> int | None:
    """The first line that declares the top-level ``key`` (a header or an assignment),
    found by a plain search; None when the spelling cannot be found that way."""
    name = re.escape(key)
    pattern = re.compile(
        rf"""^[ \t]*(?:\[\[?[ \t]*(?P<q1>["']?){name}(?P=q1)[ \t]*[\].]"""
        rf"""|(?P<q2>["']?){name}(?P=q2)[ \t]*[=.])""",
        re.MULTILINE,
    )
    match = pattern.search(source)
    if match is None:
        return None
    return source.count("\n", 0, match.start()) + 1


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to ``key``, or nothing."""
    hint = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def _scan_layout(source: str, counts: Mapping[str, int]) -> tuple[list[str], dict[str, list[int]]]:
    """Find where the case arrays are declared in the text of a valid TOML document.

    Returns the arrays in the order of their first appearance and, for each array, the
    1-based lines of its ``[[...]]`` headers; the TOML parser keeps neither. ``counts``
    holds how many entries the parser found in each array. A plain search for header
    lines is enough when it finds exactly that many: a header-like line inside a
    multi-line string would have made the count too high (every spelling of a header
    but one with escapes in a quoted key is found). Otherwise the careful scan, which
    reads every string and comment, decides; that keeps large suites fast.
    """
    text = "\n" + source
    order: list[str] = []
    lines: dict[str, list[int]] = {}
    line = 0
    counted_to = 0
    for match in _CASE_HEADER_LINE.finditer(text):
        start = match.start() + 1
        line += text.count("\n", counted_to, start)
        counted_to = start
        name = match["name"]
        lines.setdefault(name, []).append(line)
        if name not in order:
            order.append(name)
    if all(len(lines.get(name, ())) == count for name, count in counts.items()):
        return order, lines
    return _scan_layout_carefully(text)


def _scan_layout_carefully(text: str) -> tuple[list[str], dict[str, list[int]]]:
    """Like :func:`_scan_layout`, but skipping strings and comments token by token.

    ``text`` is the document with a newline in front. The inline form ``cases = [``
    counts for the order only before the first table header, where it is a top-level key.
    """
    order: list[str] = []
    lines: dict[str, list[int]] = {}
    in_root = True
    line = 0
    counted_to = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "header":
            start = match.start() + 1
            line += text.count("\n", counted_to, start)
            counted_to = start
            name = match["hname"]
            lines.setdefault(name, []).append(line)
            if name not in order:
                order.append(name)
            in_root = False
        elif kind == "table":
            in_root = False
        elif kind == "inline" and in_root:
            name = match["iname"]
            if name not in order:
                order.append(name)
    return order, lines


def _optional_string(document: Mapping[str, Any], key: str, problems: list[str]) -> str | None:
    """The top-level string ``key``, or None when absent; records a wrong type."""
    value = document.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"{key} must be a string, not {_type_name(value)}")
    return None


def _is_string_list(value: Any) -> bool:
    """Whether ``value`` is a TOML array whose items are all strings."""
    return isinstance(value, list) and all(map(isinstance, value, repeat(str)))


def _is_array_of_tables(value: Any) -> bool:
    """Whether ``value`` is a non-empty TOML array holding only tables."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _type_name(value: Any) -> str:
    """The TOML name of a parsed value's type, for messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"

"""Read an ``evals.toml`` file into a validated, frozen :class:`~cer.model.Suite`.

The loader reports every problem of a suite at once, so that a suite author can fix a
file in one pass, and it keeps the cases in the order the file declares them, because
results, reports and recorded runs are all compared in that order.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import hashlib
import marshal
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, compress, pairwise, repeat
from operator import and_, attrgetter, not_
from pathlib import Path
from typing import Any

from cer.model import (
    ARRAY_TO_CASE_CLASS,
    CASE_FIELDS,
    SELF_REPORTED,
    Case,
    Suite,
    build_cases,
    case_columns,
    pack_table,
)
from cer.suite.layout import CASE_HEADER_LINE, scan_layout, top_level_line

try:
    import tomli as _toml
except ImportError:  # pragma: no cover - tomli is a declared dependency
    import tomllib as _toml  # type: ignore[no-redef]

__all__ = [
    "SUPPORTED_VERSIONS",
    "SuiteError",
    "TableMemo",
    "load_suite",
    "parse_suite",
    "parse_suite_columns",
    "read_suite_file",
]

SUPPORTED_VERSIONS: tuple[str, ...] = ("0.1", "0.2")
"""The ``commonsformat_evals`` versions this runner reads, oldest first."""

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


def load_suite(path: str | Path, *, memo: TableMemo | None = None) -> Suite:
    """Read and validate the suite file at ``path``.

    An unreadable file raises :class:`SuiteError` with the operating system's reason,
    so that callers can report it like any other suite problem. ``memo`` holds the
    groups of cases an earlier load of the file parsed (see :class:`TableMemo`): only
    the groups whose text changed since are parsed again.
    """
    suite_path = Path(path)
    return parse_suite(read_suite_file(suite_path), suite_path, memo=memo)


def read_suite_file(path: Path) -> bytes:
    """The bytes of the suite file at ``path``; :class:`SuiteError` with the operating
    system's reason when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SuiteError(path, (f"cannot read {path}: {reason}",)) from None


def parse_suite(
    text: str | bytes,
    path: Path,
    *,
    content_hash: str | None = None,
    memo: TableMemo | None = None,
) -> Suite:
    """Build a :class:`Suite` from the contents of a suite file.

    ``path`` is where the contents came from; it names the file in messages and locates
    the fixtures folder. ``content_hash`` is the SHA-256 (hex) of the contents, when the
    caller has computed it already; ``memo``, the groups an earlier parse of the file
    parsed (:class:`TableMemo`). Raises :class:`SuiteError` listing every problem
    found.
    """
    return parse_suite_columns(text, path, content_hash=content_hash, memo=memo)[0]


Columns = list[list[Any]]
"""A suite's cases as one list per field of :data:`cer.model.CASE_FIELDS`, tables
packed: what :func:`cer.model.build_cases` builds them from."""


def parse_suite_columns(
    text: str | bytes,
    path: Path,
    *,
    content_hash: str | None = None,
    memo: TableMemo | None = None,
) -> tuple[Suite, Columns]:
    """Like :func:`parse_suite`, with the columns the cases were built from, which the
    suite cache writes as they are instead of taking 100,000 cases apart again (none,
    an empty list, after a load with a ``memo``)."""
    path = Path(path)
    if content_hash is None:
        raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
        content_hash = hashlib.sha256(raw).hexdigest()
    if isinstance(text, str):
        source = text
    else:
        try:
            source = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SuiteError(
                path, (f"not valid UTF-8 (byte {exc.start} cannot be decoded)",)
            ) from None
    source = source.removeprefix("\ufeff")

    with _collector_paused():
        try:
            loaded = _load_common_shape(source, path, content_hash, memo)
        except RecursionError:
            loaded = None
        if loaded is not None:
            return loaded
        try:
            document = _toml.loads(source)
        except _toml.TOMLDecodeError as exc:
            raise SuiteError(path, (_describe_toml_error(exc, source),)) from None
        except RecursionError:
            raise SuiteError(
                path, ("invalid TOML: values are nested too deeply to read",)
            ) from None
        try:
            return _build_suite_columns(document, source, path, content_hash)
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
        return (
            f"{line}:{column}: invalid TOML: {reason or message}{_opened_at(reason, line, source)}"
        )
    return f"invalid TOML: {reason or message}"


_QUOTED_TEXT = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')
"""A TOML basic or literal string on one line, whose braces are text."""


def _opened_at(reason: str | None, line: int, source: str) -> str:
    """Where the inline table an ``Unclosed inline table`` error is about was opened:
    the parser reads on past the line break (an inline table may span lines) and
    reports where it gave up, often the next case's header, far below the missing
    brace. The nearest line above with more ``{`` than ``}`` outside strings and
    comments is named; nothing when there is none."""
    if reason != "Unclosed inline table":
        return ""
    depth = 0
    lines = source.splitlines()[: line - 1]
    for number in range(len(lines), 0, -1):
        text = _QUOTED_TEXT.sub("", lines[number - 1]).split("#", 1)[0]
        depth += text.count("{") - text.count("}")
        if depth > 0:
            return f"; the table opened at line {number} is not closed (it ends with }})"
    return ""


def _build_suite(document: dict[str, Any], source: str, path: Path, content_hash: str) -> Suite:
    """Validate the parsed document and assemble the suite, or raise every problem."""
    return _build_suite_columns(document, source, path, content_hash)[0]


def _build_suite_columns(
    document: dict[str, Any], source: str, path: Path, content_hash: str
) -> tuple[Suite, Columns]:
    """:func:`_build_suite`, with the columns the cases were built from."""
    problems: list[str] = []
    warnings: list[str] = []
    top = _top_level(document, source, path, problems)

    present = [name for name in _CASE_ARRAYS if name in document]
    counts = {name: len(document[name]) for name in present if isinstance(document[name], list)}
    order, header_lines = scan_layout(source, counts)

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

    rows: list[tuple[Any, ...]] = []
    first_seen: dict[str, tuple[int, str, int, int | None]] = {}
    for position, (array, index, entry, line) in enumerate(entries, start=1):
        case_class = ARRAY_TO_CASE_CLASS[array]
        row = _case_row(entry, case_class, index, position, line)
        if row is not None:
            rows.append(row)
            name: Any = row[0]
        else:
            problems.extend(_case_problems(entry, array, index, line))
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name.strip():
                continue
        earlier = first_seen.setdefault(name, (position, array, index, line))
        if earlier[0] != position:
            first_position, first_array, first_index, first_line = earlier
            problems.append(
                f'[[{array}]] #{index} "{name}" ({_at_line(line)}position {position}): '
                f"duplicate name, already used by [[{first_array}]] #{first_index} "
                f"({_at_line(first_line)}position {first_position})"
            )

    if problems:
        raise SuiteError(path, problems)
    if not entries:
        warnings.append("the suite declares no cases")
    columns: Columns = [list(column) for column in zip(*rows, strict=True)]
    if not columns:
        columns = [[] for _ in CASE_FIELDS]
    cases = build_cases(columns)
    return _suite(path, top, cases, content_hash, tuple(warnings)), columns


_GROUP = 400
"""The most cases the fast load parses at a time: the parser's tables for one group are
all it holds at once besides the packed cases, and a group is what an edit of one case
parses again when the load has a :class:`TableMemo`."""
_CUT_MASK = 63
_CUT_TEXT = 64
"""A group ends before a case header whose first :data:`_CUT_TEXT` characters (the
header and, mostly, the case's name) have a hash with no bit of :data:`_CUT_MASK` set,
once the group holds an eighth of :data:`_GROUP` cases (or when it holds them all): the
groups are about 110 cases long, and where they end depends on the text around each
cut, not on how many cases come before it, so that a case added or removed changes its
own group alone and every group after it is the same text as before."""
_JUST_STR = frozenset((str,))
_STR_OR_NONE = frozenset((str, type(None)))
_TABLE_OR_NONE = frozenset((dict, type(None)))
_LIST_OR_NONE = frozenset((list, type(None)))
_PACKED_EMPTY = marshal.dumps({})


@dataclass(frozen=True)
class _Group:
    """One group of cases as a load made it: its cases, and the place they had (first
    position, each array's count before the group, first line)."""

    place: tuple[int, tuple[int, ...], int]
    cases: tuple[Case, ...]


_DECLARED_FIELDS = (
    "name",
    "category",
    "input",
    "expect",
    "description",
    "verifies",
    "tags",
    "severity",
)
"""The fields a case's entry in the file declares, in the order its columns are read."""

_DECLARED = tuple(CASE_FIELDS.index(name) for name in _DECLARED_FIELDS)
"""Where the fields a group's text alone decides sit among a case's columns."""


class TableMemo:
    """The groups of cases the last load of one suite file parsed, by the exact text of
    each group: what a watching session keeps between loads, so that the load after an
    edit parses only the groups whose text changed and takes the others as they were.

    Only what the text alone decides is taken: a group's cases as they were when they
    sit at the same position, array index and line as before, and otherwise (a case
    above grew by a line) cases built again from their validated, packed fields. A
    group that
    defines anything besides its cases (a table such as ``[properties]`` after the
    cases) is always parsed, and the part before the first case, as every check across
    groups (duplicate names, the top-level fields), is made afresh on every load: the
    suite is the one a load without the memo gives, problems and messages included.

    The memo keeps the groups of the last load that succeeded only, so it holds about
    one copy of the file's text, and cases the suite holds too; a load that fails leaves
    it as it was.
    """

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}
        self._adopted: Sequence[Case] = ()
        self.parsed = 0
        """How many groups the last load parsed (the others came from the memo)."""
        self.reused = 0
        """How many groups the last load took from the memo."""

    def __len__(self) -> int:
        return len(self._groups)

    def clear(self) -> None:
        """Forget every group (the next load parses the whole file)."""
        self._groups = {}
        self._adopted = ()

    def adopt(self, cases: Sequence[Case]) -> None:
        """Have the next load keep ``cases`` (a suite's, loaded otherwise: from the suite
        cache) wherever it builds cases equal to them at the same position, instead of
        its own: the memo then shares them with that suite rather than holding a second
        copy of every case."""
        self._adopted = cases


def _load_common_shape(
    source: str, path: Path, content_hash: str, memo: TableMemo | None = None
) -> tuple[Suite, Columns] | None:
    """The suite, when it has the common shape and no problem at all; otherwise None,
    and the careful path (:func:`_build_suite` on the whole document) decides, with a
    precise message for every problem.

    The text is cut at each line that looks like a case header (``[[cases]]``), and the
    part before the first one and each group of cases is parsed on its own. Those
    parses mean what the whole document means when all of them succeed, the part before
    the first header defines no case array, every other top-level key is defined in
    one part only, and each group holds as many entries of each case array as its
    headers: a cut inside a multi-line string or array would leave that construct
    unterminated in the part before the cut, which the parser refuses; a table of
    another part's case (``[cases.input]`` after an ``[[adversarial]]`` header) would
    make ``cases`` a table in its group, which the counts refuse; and no other key can
    span two parts. Parsing in groups costs the same as one parse and lets each group's
    tables go as soon as its cases are built, so a large suite never exists as parsed
    tables all at once.

    Each group is validated column by column, with one C-level loop per field and
    check, instead of a dozen Python-level operations per case. With a ``memo``, a
    group whose text an earlier load parsed is taken from it instead (its cases
    themselves when they sit where they sat, at the same position, index and line).
    """
    text = "\n" + source
    matches = list(CASE_HEADER_LINE.finditer(text))
    del text
    if not matches:
        return None
    # The header of a match starting at text offset k starts at source offset k.
    starts: list[int] = list(map(re.Match.start, matches))
    arrays: list[str] = list(map(re.Match.group, matches, repeat("name")))
    del matches
    lines = list(accumulate(map(source.count, repeat("\n"), [0, *starts[:-1]], starts), initial=1))[
        1:
    ]
    try:
        document: dict[str, Any] = _toml.loads(source[: starts[0]])
    except _toml.TOMLDecodeError:
        return None
    if not document.keys().isdisjoint(ARRAY_TO_CASE_CLASS):
        return None
    bounds = [*starts, len(source)]
    cases: list[Case] = []
    indexes = dict.fromkeys(ARRAY_TO_CASE_CLASS, 0)
    interned: dict[Any, Any] = {}
    names: set[str] = set()
    # The columns the suite cache writes; a load with a memo leaves the cache to take
    # the cases apart, which costs less than doing so here for every group it keeps.
    every: Columns | None = [[] for _ in CASE_FIELDS] if memo is None else None
    known = {} if memo is None else memo._groups
    adopted: Sequence[Case] = () if memo is None else memo._adopted
    kept: dict[str, _Group] = {}
    parsed_groups = groups = 0
    for first, last in pairwise(_cuts(source, bounds)):
        group_text = source[starts[first] : bounds[last]]
        groups += 1
        group = arrays[first:last]
        place = (len(cases), tuple(indexes.values()), lines[first])
        remembered = known.get(group_text)
        alone = True
        columns: list[list[Any]] | None = None
        if remembered is None:
            parsed_groups += 1
            try:
                parsed = _toml.loads(group_text)
            except _toml.TOMLDecodeError:
                return None
            for key, value in parsed.items():
                if key not in ARRAY_TO_CASE_CLASS:
                    if key in document:
                        return None
                    document[key] = value
                    alone = False
            entries = _group_entries(parsed, group)
            if entries is None:
                return None
            columns = _common_columns(entries, interned)
            if columns is None:
                return None
            del parsed, entries
        elif remembered.place != place:  # moved: built again, from what it declares
            taken = case_columns(remembered.cases)
            columns = [list(taken[at]) for at in _DECLARED]
        if len(set(group)) == 1:
            array = group[0]
            case_class: Iterable[str] = repeat(ARRAY_TO_CASE_CLASS[array], len(group))
            index: Iterable[int] = range(indexes[array] + 1, indexes[array] + len(group) + 1)
            indexes[array] += len(group)
        else:
            case_class = [ARRAY_TO_CASE_CLASS[array] for array in group]
            index = []
            for array in group:
                indexes[array] += 1
                index.append(indexes[array])
        if columns is None:  # remembered, at the same place: its very cases
            assert remembered is not None
            built: tuple[Case, ...] = remembered.cases
            names.update(map(attrgetter("name"), built))
        else:
            name_column, category, input_, expect, description, verifies, tags, severity = columns
            position = range(len(cases) + 1, len(cases) + len(group) + 1)
            names.update(name_column)
            group_columns: Columns = [
                name_column,
                list(case_class),
                category,
                list(position),
                list(index),
                input_,
                expect,
                description,
                verifies,
                tags,
                severity,
                lines[first:last],
            ]
            built = tuple(build_cases(group_columns))
            if adopted:
                prior = tuple(adopted[len(cases) : len(cases) + len(built)])
                if prior == built:
                    built = prior
            if every is not None:
                for whole, part in zip(every, group_columns, strict=True):
                    whole.extend(part)
        cases.extend(built)
        if memo is not None and (remembered is not None or alone):
            kept[group_text] = _Group(place, built)
    if len(names) != len(cases):
        return None  # a duplicate name
    problems: list[str] = []
    try:
        top = _top_level(document, source, path, problems)
    except SuiteError:
        return None
    if problems:
        return None
    if memo is not None:
        memo._groups = kept
        memo._adopted = ()
        memo.parsed = parsed_groups
        memo.reused = groups - parsed_groups
    return _suite(path, top, cases, content_hash, ()), [] if every is None else every


def _cuts(source: str, bounds: list[int]) -> list[int]:
    """Where the groups of cases begin, as indexes of their first case, and the number
    of cases last (``bounds`` holds where each case header starts, then the end of
    the text): see :data:`_CUT_TEXT`. The text near each header is hashed with one
    C-level loop, and only the headers it picks are looked at one by one."""
    count = len(bounds) - 1
    ends = map(min, map(_CUT_TEXT.__add__, bounds[:-1]), bounds[1:])
    keys = map(hash, map(source.__getitem__, map(slice, bounds, ends)))
    picked = compress(range(count), map(not_, map(and_, keys, repeat(_CUT_MASK))))
    shortest = max(_GROUP // 8, 1)
    cuts = [0]
    for index in chain(picked, (count,)):
        while index - cuts[-1] > _GROUP:  # no cut for too long: one where the most fit
            cuts.append(cuts[-1] + _GROUP)
        if index - cuts[-1] >= shortest or index == count:
            cuts.append(index)
    return cuts


def _group_entries(parsed: dict[str, Any], group: list[str]) -> list[Any] | None:
    """The entries of the case arrays in ``parsed``, in the order of their headers
    (``group`` names each header's array), or None when the counts do not match."""
    present = [key for key in parsed if key in ARRAY_TO_CASE_CLASS]
    if len(set(group)) == 1:
        values = parsed.get(group[0])
        if present != [group[0]] or type(values) is not list or len(values) != len(group):
            return None
        return values
    iterators = {}
    for array in present:
        values = parsed[array]
        if type(values) is not list or len(values) != group.count(array):
            return None
        iterators[array] = iter(values)
    if set(iterators) != set(group):
        return None
    return [next(iterators[array]) for array in group]


def _common_columns(entries: list[Any], interned: dict[Any, Any]) -> list[list[Any]] | None:
    """The columns name, category, input, expect, description, verifies, tags and
    severity of ``entries``, validated and ready for :func:`cer.model.build_cases`
    (tables packed; repeated categories, severities and lists shared through
    ``interned``), or None when any entry is not exactly right."""
    if set(map(type, entries)) != {dict} or not all(map(_CASE_KEYS.issuperset, entries)):
        return None
    get = dict.get
    fields: list[list[Any]] = [list(map(get, entries, repeat(key))) for key in _DECLARED_FIELDS]
    name, category, input_, expect, description, verifies, tags, severity = fields
    if not (
        set(map(type, name)) == _JUST_STR
        and all(map(str.strip, name))
        and set(map(type, category)) == _JUST_STR
        and all(map(str.strip, category))
        and set(map(type, input_)) <= _TABLE_OR_NONE
        and set(map(type, expect)) <= _TABLE_OR_NONE
        and set(map(type, description)) <= _STR_OR_NONE
        and set(map(type, severity)) <= _STR_OR_NONE
        and set(map(type, verifies)) <= _LIST_OR_NONE
        and set(map(type, chain.from_iterable(filter(None, verifies)))) <= _JUST_STR
        and set(map(type, tags)) <= _LIST_OR_NONE
        and set(map(type, chain.from_iterable(filter(None, tags)))) <= _JUST_STR
    ):
        return None
    if not all(map(_declares_well, expect)):
        return None
    share = interned.setdefault
    verifies = [() if value is None else tuple(value) for value in verifies]
    tags = [() if value is None else tuple(value) for value in tags]
    return [
        name,
        list(map(share, category, category)),
        _pack_column(input_),
        _pack_column(expect),
        description,
        list(map(share, verifies, verifies)),
        list(map(share, tags, tags)),
        list(map(share, severity, severity)),
    ]


def _pack_column(tables: list[dict[str, Any] | None]) -> list[Any]:
    """Each table packed (:func:`cer.model.pack_table`), an absent one as ``{}``."""
    dumps = marshal.dumps
    try:
        return [_PACKED_EMPTY if table is None else dumps(table) for table in tables]
    except ValueError:  # a date or time somewhere: pack case by case
        return [pack_table({} if table is None else table) for table in tables]


_TopLevel = tuple[str, str | None, str | None, Mapping[str, Any], tuple[str, ...]]
"""A suite's top-level fields: format version, target, target version, properties and
adversarial coverage categories."""


def _top_level(
    document: Mapping[str, Any], source: str, path: Path, problems: list[str]
) -> _TopLevel:
    """Validate every top-level key of ``document`` but the case arrays; record what is
    wrong in ``problems`` (an unsupported format version raises at once)."""
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
    return format_version, target, target_version, properties, coverage


def _suite(
    path: Path, top: _TopLevel, cases: list[Case], content_hash: str, warnings: tuple[str, ...]
) -> Suite:
    format_version, target, target_version, properties, coverage = top
    return Suite(
        path=path,
        format_version=format_version,
        target=target,
        target_version=target_version,
        cases=tuple(cases),
        content_hash=content_hash,
        properties=properties,
        adversarial_coverage=coverage,
        warnings=warnings,
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


def _case_row(
    entry: Any, case_class: str, index: int, position: int, line: int | None
) -> tuple[Any, ...] | None:
    """The field values (in :data:`cer.model.CASE_FIELDS` order, tables packed) of the
    case an entry of a case array declares, or None when the entry has problems;
    :func:`_case_problems` explains a refusal."""
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
        and (expect is None or (isinstance(expect, dict) and _declares_well(expect)))
        and (description is None or isinstance(description, str))
        and (severity is None or isinstance(severity, str))
        and (verifies is None or _is_string_list(verifies))
        and (tags is None or _is_string_list(tags))
    ):
        return None
    return (
        name,
        case_class,
        category,
        position,
        index,
        pack_table({} if input_ is None else input_),
        pack_table({} if expect is None else expect),
        description,
        () if verifies is None else tuple(verifies),
        () if tags is None else tuple(tags),
        severity,
        line,
    )


def _at_line(line: int | None) -> str:
    """``line 12, `` before a case's position when its header's line is known."""
    return f"line {line}, " if line is not None else ""


def _case_problems(entry: Any, array: str, index: int, line: int | None) -> list[str]:
    """Every problem of an entry that :func:`_build_case` refused, in field order."""
    if not isinstance(entry, dict):
        return [f"[[{array}]] #{index} must be a table, not {_type_name(entry)}"]
    problems: list[str] = []
    name = entry.get("name")
    label = f"[[{array}]] #{index}"
    if isinstance(name, str) and name.strip():
        label += f' "{name}"'
    if line is not None:
        label += f" (line {line})"
    for key in entry:
        if key not in _CASE_KEYS:
            problems.append(
                f"{label}: unknown field {key!r}{_did_you_mean(key, _CASE_KEYS)}; "
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
    expect = entry.get("expect")
    if isinstance(expect, dict) and not _declares_well(expect):
        problems.append(
            f"{label}: expect.{SELF_REPORTED} must be a non-empty array of the "
            "names of keys the case compares whose values are the implementation's own "
            f'figures, e.g. {SELF_REPORTED} = ["count"], {_declared_wrong(expect[SELF_REPORTED])}'
        )
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
    line = top_level_line(key, source)
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


def _did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to ``key``, or nothing."""
    hint = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def _optional_string(document: Mapping[str, Any], key: str, problems: list[str]) -> str | None:
    """The top-level string ``key``, or None when absent; records a wrong type."""
    value = document.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"{key} must be a string, not {_type_name(value)}")
    return None


def _declares_well(expect: dict[str, Any] | None) -> bool:
    """Whether ``expect`` (None: absent) holds no ``self_reported`` declaration, or one
    of the right shape: a non-empty array of non-empty strings."""
    if not expect or SELF_REPORTED not in expect:
        return True
    value = expect[SELF_REPORTED]
    return _is_string_list(value) and bool(value) and all(value)


def _declared_wrong(value: Any) -> str:
    """What is wrong with a ``self_reported`` value :func:`_declares_well` refused."""
    if not isinstance(value, list):
        return f"not {_type_name(value)}"
    if not value:
        return "but it names no key"
    odd = next(item for item in value if not (isinstance(item, str) and item))
    return f"but it holds {'an empty string' if odd == '' else _type_name(odd)}"


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

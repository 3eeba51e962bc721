"""A cache of validated suites under ``.cer/cache/`` beside the suite, so that reloading
an unchanged 100,000-case suite (the TUI does it on every save) skips the TOML parse.

The cache is never trusted blindly. An entry is used only when all of these hold:

- it starts with this module's magic line and a JSON header of the expected shape;
- the header names this cache format, this version of cer, this Python's ``marshal``
  format and this Python's version, the suite file's SHA-256 and size, and the
  payload's SHA-256; the file's SHA-256 is computed from the bytes just read, so an
  entry made for another content is never served;
- the payload's SHA-256 matches (a torn or corrupt write is refused before it is
  decoded);
- the payload decodes (``marshal``, plain data only: no code is ever run from it, and
  no class is looked up, unlike ``pickle``) to a table of the expected shape: one
  column per field of a :class:`~cer.model.Case`, all of one length, each value of the
  right type, positions counting from 1, and each packed ``input`` and ``expect`` the
  ``marshal`` bytes of a table.

Anything else (a missing, stale, corrupt, truncated or foreign entry) is ignored and
replaced by a fresh one after a full load. Entries are written atomically (a temporary
file, then a rename), so a reader sees either the old entry or the new one.

The runner's sandbox keeps the implementation out of ``.cer/`` (docs/trust.md), so
under it the implementation cannot forge an entry. Without the sandbox the
implementation can write anything the user can, the suite file and cer itself
included; a forged entry is then no easier than a forged suite.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
import tempfile
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import cer
from cer.model import CASE_CLASSES, CASE_FIELDS, Suite, build_cases, case_columns, pack_table
from cer.suite.loader import (
    Columns,
    _collector_paused,
    parse_suite_columns,
    read_suite_file,
)

__all__ = ["CACHE_DIR", "FORMAT", "cache_file", "load_suite_cached"]

FORMAT = 2
"""The layout of an entry; raised whenever what an entry holds, or how a suite is
validated, changes, so that older entries are rebuilt."""
CACHE_DIR = Path(".cer") / "cache"
"""Where the entries live, relative to the suite's folder."""
_MAGIC = b"cer suite cache\n"


def cache_file(suite_path: Path) -> Path:
    """The entry of the suite at ``suite_path``: one per suite file, named after it and
    its absolute path (two suites of one folder never share an entry)."""
    absolute = os.path.abspath(suite_path)
    tag = hashlib.sha256(absolute.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return Path(absolute).parent / CACHE_DIR / f"{Path(absolute).name}-{tag}.marshal"


def _identity(raw: bytes) -> dict[str, Any]:
    """What an entry must have been made from to be served for ``raw``."""
    return {
        "format": FORMAT,
        "cer": cer.__version__,
        "marshal": marshal.version,
        "python": list(sys.version_info[:3]),
        "suite_sha256": hashlib.sha256(raw).hexdigest(),
        "suite_size": len(raw),
    }


def load_suite_cached(path: str | Path) -> Suite:
    """Like :func:`cer.suite.loader.load_suite`, through the cache: an unchanged suite is read
    back from its entry, any other is loaded in full and its entry written.

    A cache that cannot be read or written (a read-only folder, a full disk) costs only
    the time; the suite is the same either way.
    """
    suite_path = Path(path)
    raw = read_suite_file(suite_path)
    identity = _identity(raw)
    entry = cache_file(suite_path)
    cached = _read_entry(entry, identity, suite_path)
    if cached is not None:
        return cached
    with _collector_paused():  # writing allocates little: no reason to walk the suite
        suite, columns = parse_suite_columns(raw, suite_path, content_hash=identity["suite_sha256"])
        del raw  # the file's bytes and the entry's need not be held at once
        _write_entry(entry, identity, suite, columns)
    return suite


def _read_entry(entry: Path, identity: dict[str, Any], suite_path: Path) -> Suite | None:
    """The suite an entry holds, or None when the entry is missing or not usable."""
    try:
        data = entry.read_bytes()
    except OSError:
        return None
    try:
        if not data.startswith(_MAGIC):
            return None
        end = data.index(b"\n", len(_MAGIC))
        header = json.loads(data[len(_MAGIC) : end])
        if not isinstance(header, dict):
            return None
        payload = memoryview(data)[end + 1 :]
        expected = {**identity, "payload_sha256": hashlib.sha256(payload).hexdigest()}
        if header != expected:
            return None
        with _collector_paused():
            table = marshal.loads(payload)
            return _suite_from(table, suite_path, identity["suite_sha256"])
    except (ValueError, EOFError, TypeError, KeyError, AttributeError, IndexError):
        return None


_TABLE_KEYS = frozenset(
    (
        "format_version",
        "target",
        "target_version",
        "properties",
        "adversarial_coverage",
        "warnings",
        "columns",
    )
)
_JUST = {kind: frozenset((kind,)) for kind in (str, int, bytes, tuple)}
_OR_NONE = {kind: frozenset((kind, type(None))) for kind in (str, int)}
_PACKED_TABLE = frozenset((ord("{"), ord("{") | 0x80))
"""The first byte of a marshalled dict (with or without marshal's reference flag)."""
_CASE_CLASSES = frozenset(CASE_CLASSES)


def _suite_from(table: Any, suite_path: Path, content_hash: str) -> Suite | None:
    """Check the decoded payload's shape and build the suite, or None.

    Every column is checked with C-level loops (the types each holds, as a set), so
    that checking 100,000 cases costs a few milliseconds.
    """
    if not isinstance(table, dict) or table.keys() != _TABLE_KEYS:
        return None
    columns = table["columns"]
    if not (
        isinstance(table["format_version"], str)
        and _optional_str(table["target"])
        and _optional_str(table["target_version"])
        and isinstance(table["properties"], dict)
        and _str_tuple(table["adversarial_coverage"])
        and _str_tuple(table["warnings"])
        and type(columns) is tuple
        and len(columns) == len(CASE_FIELDS)
        and all(type(column) is tuple for column in columns)
    ):
        return None
    (
        name,
        case_class,
        category,
        position,
        array_index,
        input_,
        expect,
        description,
        verifies,
        tags,
        severity,
        line,
    ) = columns
    if not (
        position == tuple(range(1, len(position) + 1))
        and all(len(column) == len(position) for column in columns)
        and _types(name) <= _JUST[str]
        and all(map(str.strip, name))
        and set(case_class) <= _CASE_CLASSES
        and _types(category) <= _JUST[str]
        and all(map(str.strip, category))
        and _types(array_index) <= _JUST[int]
        and _types(input_) <= _JUST[bytes]
        and set(map(itemgetter(0), input_)) <= _PACKED_TABLE
        and _types(expect) <= _JUST[bytes]
        and set(map(itemgetter(0), expect)) <= _PACKED_TABLE
        and _types(description) <= _OR_NONE[str]
        and _types(verifies) <= _JUST[tuple]
        and _types(chain.from_iterable(verifies)) <= _JUST[str]
        and _types(tags) <= _JUST[tuple]
        and _types(chain.from_iterable(tags)) <= _JUST[str]
        and _types(severity) <= _OR_NONE[str]
        and _types(line) <= _OR_NONE[int]
    ):
        return None
    shared: dict[Any, Any] = {}
    share = shared.setdefault
    columns = list(columns)
    for field in ("category", "verifies", "tags", "severity"):
        at = CASE_FIELDS.index(field)
        columns[at] = list(map(share, columns[at], columns[at]))
    return Suite(
        path=suite_path,
        format_version=table["format_version"],
        target=table["target"],
        target_version=table["target_version"],
        cases=tuple(build_cases(columns)),
        content_hash=content_hash,
        properties=table["properties"],
        adversarial_coverage=table["adversarial_coverage"],
        warnings=table["warnings"],
    )


def _types(values: Any) -> set[type]:
    """The exact types of ``values``' items."""
    return set(map(type, values))


def _optional_str(value: Any) -> bool:
    return value is None or type(value) is str


def _str_tuple(value: Any) -> bool:
    """Whether ``value`` is a tuple of strings."""
    return type(value) is tuple and _types(value) <= _JUST[str]


def _write_entry(
    entry: Path, identity: dict[str, Any], suite: Suite, columns: Columns | None = None
) -> None:
    """Write the entry of ``suite`` atomically; give up quietly when it cannot be (a
    value ``marshal`` cannot hold, such as a TOML date, or a folder that is not
    writable). ``columns`` are the ones the suite's cases were built from, when the
    caller has them (see :func:`cer.suite.loader.parse_suite_columns`).

    The payload is ``marshal`` version 2, which keeps no references between equal
    objects: writing is about twice as fast, and the reader shares repeated values
    again."""
    written: list[Any] = case_columns(suite.cases) if columns is None else list(columns)
    for field in ("input", "expect"):  # a case built by hand holds its tables unpacked
        at = CASE_FIELDS.index(field)
        if _types(written[at]) != _JUST[bytes]:
            written[at] = list(map(pack_table, written[at]))
    table = {
        "format_version": suite.format_version,
        "target": suite.target,
        "target_version": suite.target_version,
        "properties": dict(suite.properties),
        "adversarial_coverage": tuple(suite.adversarial_coverage),
        "warnings": tuple(suite.warnings),
        "columns": tuple(map(tuple, written)),
    }
    try:
        payload = marshal.dumps(table, 2)
    except ValueError:
        return  # a value marshal cannot hold (dates and times): no entry
    header = {**identity, "payload_sha256": hashlib.sha256(payload).hexdigest()}
    head = _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n"
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        marker = entry.parent / ".gitignore"
        if not marker.exists():  # the cache stays out of ``git status``
            marker.write_text("# Written by cer: the suite cache.\n*\n", encoding="utf-8")
        handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(head)
                out.write(payload)
            os.replace(temporary, entry)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return

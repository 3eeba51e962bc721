"""The drafts file: ``evals.drafts.toml`` beside the suite, never the suite itself.

``cer derive`` writes proposed cases here; a person reviews them (edits the file, or
uses the TUI), then approves or discards each one. Nothing in this file is run by
``cer run`` or counts in a verdict. The file is rewritten with a style-preserving TOML
library, so a person's edits and comments in it survive each change.

Layout::

    discarded = ["name", ...]      # drafts a person discarded: never proposed again

    [[drafts]]
    name = "left-associativity-example"
    constraint = "left-associativity"
    enforceability = "mechanical"  # or "needs-input", "not-mechanical"
    why = "the text's example `10 - 4 - 3` is `3`"
    array = "cases"                # where an approved case goes
    category = "functional"
    description = "..."
    input = { expr = "10 - 4 - 3" }   # absent: a person must write one
    expect = { value = 3 }            # absent: none the text states
    observed = { value = 3 }          # with --impl: what it did, a proposal only
    observed_from = "calc_ref:evaluate@1a2b3c4d5e"
"""

from __future__ import annotations

import math
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import tomlkit
from tomlkit.items import AoT, Item, Table

from cer.model import ARRAY_TO_CASE_CLASS
from cer.review.derive import ENFORCEABILITY, Draft
from cer.text.safetext import INVISIBLE_CHARS, scrub
from cer.text.tomltext import basic_string

__all__ = [
    "DraftFile",
    "DraftsError",
    "NotRepresentable",
    "add_drafts",
    "drafts_path",
    "follow_text",
    "load_drafts",
    "not_representable",
    "remove_draft",
    "set_observed",
    "toml_value",
    "unrepresentable_note",
    "write_text_atomically",
]

HEADER = """\
# Drafts of cases proposed by `cer derive` from commonsformat.md. Nothing in this file
# is run by `cer run` or counts in a verdict. Review each draft (edit it here if it
# needs to), then `cer approve NAME` moves it into the suite and `cer discard NAME`
# drops it. `observed` is what an implementation did, never checked: approving with
# --use-observed takes it as the expectation on purpose.
"""


class DraftsError(Exception):
    """The drafts file cannot be read or written, or holds no such draft."""


@dataclass(frozen=True)
class DraftFile:
    """The drafts on file and the names of discarded ones."""

    path: Path
    drafts: tuple[Draft, ...]
    discarded: tuple[str, ...]

    def get(self, name: str) -> Draft:
        for draft in self.drafts:
            if draft.name == name:
                return draft
        known = ", ".join(d.name for d in self.drafts) or "none"
        raise DraftsError(f"no draft named {name!r} in {self.path} (drafts: {known})")


def drafts_path(suite_path: str | Path) -> Path:
    """``evals.drafts.toml`` beside ``evals.toml`` (the suite's stem + ``.drafts.toml``)."""
    path = Path(suite_path)
    return path.with_name(f"{path.stem}.drafts.toml")


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place."""
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _read_document(path: Path) -> tomlkit.TOMLDocument:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.parse(HEADER)
    except (OSError, UnicodeDecodeError) as exc:
        raise DraftsError(f"cannot read {path}: {exc}") from exc
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise DraftsError(f"{path}: invalid TOML: {exc}") from exc


def _string(table: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = table.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise DraftsError(f"{where}: {key} must be a non-empty string")
    return str(value)


def _mapping(table: Mapping[str, Any], key: str, where: str) -> dict[str, Any] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise DraftsError(f"{where}: {key} must be a table")
    return cast(dict[str, Any], _plain(value))


def _plain(value: Any) -> Any:
    """tomlkit's items as plain Python data."""
    if isinstance(value, Item):
        value = value.unwrap()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _draft_from(table: Mapping[str, Any], path: Path, index: int) -> Draft:
    name = table.get("name")
    where = f"{path.name}: [[drafts]] #{index}" + (f' "{name}"' if isinstance(name, str) else "")
    label = _string(table, "enforceability", where)
    if label not in ENFORCEABILITY:
        raise DraftsError(f"{where}: enforceability must be one of {', '.join(ENFORCEABILITY)}")
    array = _string(table, "array", where) or "cases"
    if array not in ARRAY_TO_CASE_CLASS:
        raise DraftsError(f"{where}: array must be one of {', '.join(ARRAY_TO_CASE_CLASS)}")
    return Draft(
        name=cast(str, _string(table, "name", where)),
        constraint=cast(str, _string(table, "constraint", where)),
        array=array,
        category=cast(str, _string(table, "category", where)),
        enforceability=label,
        why=_string(table, "why", where, required=False) or "",
        description=_string(table, "description", where, required=False) or "",
        input=_mapping(table, "input", where),
        expect=_mapping(table, "expect", where),
        severity=_string(table, "severity", where, required=False),
        observed=_mapping(table, "observed", where),
        observed_from=_string(table, "observed_from", where, required=False),
        observed_note=_string(table, "observed_note", where, required=False),
    )


def load_drafts(path: str | Path) -> DraftFile:
    """The drafts on file (none when the file does not exist)."""
    path = Path(path)
    document = _read_document(path)
    entries = document.get("drafts", [])
    if not isinstance(entries, list):
        raise DraftsError(f"{path.name}: drafts must be an array of tables ([[drafts]])")
    drafts = []
    seen: set[str] = set()
    for index, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping):
            raise DraftsError(f"{path.name}: [[drafts]] #{index} must be a table")
        draft = _draft_from(entry, path, index)
        if draft.name in seen:
            raise DraftsError(f"{path.name}: two drafts are named {draft.name!r}")
        seen.add(draft.name)
        drafts.append(draft)
    discarded = document.get("discarded", [])
    if not isinstance(discarded, list) or not all(isinstance(n, str) for n in discarded):
        raise DraftsError(f"{path.name}: discarded must be a list of names")
    return DraftFile(path, tuple(drafts), tuple(str(n) for n in discarded))


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
# What a TOML file should not carry raw, though a basic string may: the characters
# cer.text.safetext shows as escapes on a terminal (C0 but tab and newline, DEL, C1, the
# bidi controls and invisible joiners), plus the carriage return a reader may fold.
_ESCAPED = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE_CHARS}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
NOTE_CHARS = 200
"""Characters of a value's ASCII form quoted in a note saying TOML cannot hold it."""


class NotRepresentable(ValueError):
    """A value TOML cannot hold as it is: a lone surrogate (TOML text is UTF-8), bytes,
    a table key that is not a string, ``None``, an object of another type."""


def toml_value(value: Any, *, padded: bool = True) -> Item:
    """A value as a tomlkit item: tables inline (``{ k = v }`` when ``padded``) unless
    they hold multi-line text, strings multi-line when they hold line breaks.

    This is the one place cer writes a value into a TOML file (a draft, an approved
    case). Control, bidi and invisible characters are written as escapes, never raw,
    and the item is checked to read back as exactly ``value``; what TOML cannot hold
    raises :class:`NotRepresentable`, whose message says why."""
    item = _item(value, padded=padded, one_line=False)
    _check_reads_back(value, _item(value, padded=padded, one_line=False))
    return item


def not_representable(value: Any) -> str | None:
    """Why TOML cannot hold ``value``, or None when :func:`toml_value` can write it."""
    try:
        toml_value(value)
    except NotRepresentable as exc:
        return str(exc)
    return None


def unrepresentable_note(value: Any, why: str) -> str:
    """The note a draft carries instead of a value TOML cannot hold: why, and the value
    in ASCII (every control and non-ASCII character escaped), cut to a bounded length."""
    shown = ascii(value)
    if len(shown) > NOTE_CHARS:
        shown = shown[: NOTE_CHARS - 1] + "…"
    return f"observed value not representable in TOML: {why}: {shown}"


def _item(value: Any, *, padded: bool, one_line: bool) -> Item:
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise NotRepresentable(f"a table key of type {type(key).__name__}")
        if not one_line and _has_newline(value) and not any(_needs_escapes(k) for k in value):
            table = tomlkit.table()
            for key, item in value.items():
                table.add(key, _item(item, padded=padded, one_line=False))
            return table
        parts = [
            f"{_key(k)} = {_item(v, padded=padded, one_line=True).as_string()}"
            for k, v in value.items()
        ]
        if not parts:
            return tomlkit.inline_table()
        inner = ", ".join(parts)
        text = f"{{ {inner} }}" if padded else f"{{{inner}}}"
        return cast(Item, tomlkit.parse(f"v = {text}\n")["v"])
    if isinstance(value, str):
        return _string_item(value, one_line=one_line)
    if isinstance(value, list | tuple):
        array = tomlkit.array()
        for item in value:
            array.append(_item(item, padded=padded, one_line=one_line))
        return array
    if value is None or isinstance(value, bytes | bytearray):
        raise NotRepresentable(f"TOML has no {type(value).__name__} value")
    try:
        return cast(Item, tomlkit.item(value))
    except (TypeError, ValueError) as exc:  # tomlkit's ConvertError is a TypeError
        raise NotRepresentable(f"TOML has no {type(value).__name__} value") from exc


def _needs_escapes(text: str) -> bool:
    return _ESCAPED.search(text) is not None or _SURROGATE.search(text) is not None


def _string_item(value: str, *, one_line: bool) -> Item:
    if _SURROGATE.search(value) is not None:
        raise NotRepresentable("a lone surrogate (TOML text is UTF-8)")
    multiline = "\n" in value and not one_line
    if _ESCAPED.search(value) is not None:
        return cast(Item, tomlkit.parse(f"v = {basic_string(value, multiline=multiline)}\n")["v"])
    if multiline:
        return tomlkit.string(value, multiline=True, literal="'''" not in value)
    return cast(Item, tomlkit.item(value))


def _check_reads_back(value: Any, item: Item) -> None:
    """Raise :class:`NotRepresentable` unless ``item`` reads back as ``value``."""
    document = tomlkit.document()
    document.add("v", item)
    try:
        read = tomllib.loads(document.as_string())["v"]
    except (tomllib.TOMLDecodeError, UnicodeError) as exc:  # pragma: no cover - guarded
        raise NotRepresentable(f"it does not read back: {exc}") from exc
    if not _same(value, read):
        raise NotRepresentable("it does not read back as the same value")


def _same(ours: Any, read: Any) -> bool:
    """Equal and of the same type at every level (``1`` is not ``1.0`` nor ``True``)."""
    if isinstance(ours, Mapping):
        return (
            isinstance(read, dict)
            and list(ours) == list(read)
            and all(_same(ours[k], read[k]) for k in ours)
        )
    if isinstance(ours, list | tuple):
        return (
            isinstance(read, list)
            and len(ours) == len(read)
            and all(_same(a, b) for a, b in zip(ours, read, strict=True))
        )
    if type(ours) is not type(read):
        return False
    if isinstance(ours, float) and math.isnan(ours):
        return math.isnan(read)
    return bool(ours == read)


def _key(name: str) -> str:
    if _BARE_KEY.match(name):
        return name
    if _needs_escapes(name):
        if _SURROGATE.search(name) is not None:
            raise NotRepresentable("a table key holding a lone surrogate (TOML text is UTF-8)")
        return basic_string(name)
    return tomlkit.key(name).as_string()


def _has_newline(value: Any) -> bool:
    if isinstance(value, str):
        return "\n" in value
    if isinstance(value, Mapping):
        return any(_has_newline(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_newline(v) for v in value)
    return False


def _draft_table(draft: Draft) -> Table:
    table = tomlkit.table()
    table.trivia.indent = "\n"
    table.add("name", draft.name)
    table.add("constraint", draft.constraint)
    table.add("enforceability", draft.enforceability)
    table.add("why", draft.why)
    table.add("array", draft.array)
    table.add("category", draft.category)
    if draft.severity is not None:
        table.add("severity", draft.severity)
    table.add("description", draft.description)
    for key in ("input", "expect"):
        value = getattr(draft, key)
        if value is not None:
            try:
                table.add(key, toml_value(value))
            except NotRepresentable as exc:
                raise DraftsError(f"draft {draft.name!r}: {key} cannot be written: {exc}") from exc
    for key, value in _observed_fields(draft):
        table.add(key, value)
    return table


def _observed_fields(draft: Draft) -> list[tuple[str, Item | str]]:
    """The ``observed``, ``observed_from`` and ``observed_note`` a draft is written with:
    an observed value TOML cannot hold becomes a note saying so, never a failure (the
    other drafts and observations are still written)."""
    fields: list[tuple[str, Item | str]] = []
    note = draft.observed_note
    if draft.observed is not None:
        try:
            fields.append(("observed", toml_value(draft.observed)))
        except NotRepresentable as exc:
            note = unrepresentable_note(draft.observed, str(exc))
    if draft.observed_from is not None:
        fields.append(("observed_from", draft.observed_from))
    if note is not None:
        fields.append(("observed_note", _string_item(scrub(note), one_line=True)))
    return fields


def add_drafts(path: str | Path, drafts: Sequence[Draft]) -> DraftFile:
    """Add drafts not yet on file (by name); drafts already there, edited or not, stay
    as they are, and so does every comment. Returns the file's drafts afterwards."""
    path = Path(path)
    document = _read_document(path)
    present = load_drafts(path) if path.exists() else DraftFile(path, (), ())
    names = {d.name for d in present.drafts}
    fresh = [d for d in drafts if d.name not in names]
    if "discarded" not in document:
        document.add(tomlkit.nl())
        document.add("discarded", tomlkit.array())
    if fresh:
        entries = document.get("drafts")
        if entries is None:
            entries = AoT([])
            document.append("drafts", entries)
        for draft in fresh:
            entries.append(_draft_table(draft))
    write_text_atomically(path, document.as_string())
    return load_drafts(path)


def set_observed(path: str | Path, observed: Mapping[str, Draft]) -> DraftFile:
    """Write each named draft's ``observed``, ``observed_from`` and ``observed_note``
    into the file, and its label as it now stands (:attr:`Draft.standing`: a draft with
    an input and an observation no longer needs an input); nothing else."""
    path = Path(path)
    document = _read_document(path)
    for entry in document.get("drafts", []):
        draft = observed.get(str(entry.get("name")))
        if draft is None:
            continue
        for key in ("observed", "observed_from", "observed_note"):
            if key in entry:
                del entry[key]
        for key, value in _observed_fields(draft):
            entry.add(key, value)
        if entry.get("enforceability") != draft.standing:
            entry["enforceability"] = draft.standing
    write_text_atomically(path, document.as_string())
    return load_drafts(path)


_FROM_TEXT = ("constraint", "why", "description", "array", "category")
"""The fields of a draft that derive takes from its constraint's text alone."""


def _followed(on_file: Draft, derived: Draft) -> Draft | None:
    """``on_file`` as the constraint's text now derives it, or None when the text it
    came from is unchanged. What the text states (its example's input and expectation)
    replaces what the file had; what the text does not state (an input a person
    wrote) stays; an observation of an input that changed is dropped, since it is no
    longer what that input does."""
    if (on_file.why, on_file.description) == (derived.why, derived.description):
        return None
    given = derived.input if derived.input is not None else on_file.input
    expect = derived.expect if derived.expect else on_file.expect
    same_input = given == on_file.input
    followed = replace(
        on_file,
        constraint=derived.constraint,
        why=derived.why,
        description=derived.description,
        array=derived.array,
        category=derived.category,
        severity=derived.severity,
        enforceability=derived.enforceability,
        input=given,
        expect=expect,
        observed=on_file.observed if same_input else None,
        observed_from=on_file.observed_from if same_input else None,
        observed_note=on_file.observed_note if same_input else None,
    )
    return replace(followed, enforceability=followed.standing)


def follow_text(path: str | Path, derived: Sequence[Draft]) -> tuple[DraftFile, list[Draft]]:
    """Bring the drafts on file up to date with the text of their constraints: each one
    that ``derived`` (a fresh derivation) has under the same name, but from other words,
    takes what the text now says (see :func:`_followed`); every other draft and every
    comment of the file stays. Returns the file afterwards and the drafts updated."""
    path = Path(path)
    if not path.exists():
        return DraftFile(path, (), ()), []
    present = {d.name: d for d in load_drafts(path).drafts}
    updated: dict[str, Draft] = {}
    for draft in derived:
        found = present.get(draft.name)
        if found is not None:
            followed = _followed(found, draft)
            if followed is not None:
                updated[draft.name] = followed
    if not updated:
        return load_drafts(path), []
    document = _read_document(path)
    for entry in document.get("drafts", []):
        changed = updated.get(str(entry.get("name")))
        if changed is None:
            continue
        for key in (*_FROM_TEXT, "enforceability"):
            entry[key] = getattr(changed, key)
        # Each value is replaced where it stands, so that the file's comments stay put.
        for key in ("severity", "input", "expect", "observed", "observed_from", "observed_note"):
            value = getattr(changed, key)
            if value is None:
                if key in entry:
                    del entry[key]
                continue
            if key in ("observed", "observed_from", "observed_note"):
                continue  # unchanged: kept only when the input is the one observed
            try:
                entry[key] = value if isinstance(value, str) else toml_value(value)
            except NotRepresentable as exc:
                raise DraftsError(
                    f"draft {changed.name!r}: {key} cannot be written: {exc}"
                ) from exc
    write_text_atomically(path, document.as_string())
    after = load_drafts(path)
    return after, [after.get(name) for name in updated]


def remove_draft(path: str | Path, name: str, *, discard: bool) -> Draft:
    """Take one draft off the file (``discard``: and remember not to propose it again)."""
    path = Path(path)
    found = load_drafts(path).get(name)
    document = _read_document(path)
    entries = document["drafts"]
    for index, entry in enumerate(entries):
        if entry.get("name") == name:
            del entries[index]
            break
    if discard:
        discarded = document.get("discarded")
        if discarded is None:
            document.add("discarded", tomlkit.array())
            discarded = document["discarded"]
        if name not in discarded:
            discarded.append(name)
    write_text_atomically(path, document.as_string())
    return found

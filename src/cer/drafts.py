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

import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import tomlkit
from tomlkit.items import AoT, Item, Table

from cer.derive import ENFORCEABILITY, Draft
from cer.model import ARRAY_TO_CASE_CLASS

__all__ = [
    "DraftFile",
    "DraftsError",
    "add_drafts",
    "drafts_path",
    "load_drafts",
    "remove_draft",
    "set_observed",
    "toml_value",
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


def toml_value(value: Any, *, padded: bool = True) -> Item:
    """A value as a tomlkit item: tables inline (``{ k = v }`` when ``padded``) unless
    they hold multi-line text, strings multi-line when they hold line breaks."""
    if isinstance(value, Mapping):
        if _has_newline(value):
            table = tomlkit.table()
            for key, item in value.items():
                table.add(str(key), toml_value(item, padded=padded))
            return table
        parts = [
            f"{_key(str(k))} = {toml_value(v, padded=padded).as_string()}" for k, v in value.items()
        ]
        if not parts:
            return tomlkit.inline_table()
        inner = ", ".join(parts)
        text = f"{{ {inner} }}" if padded else f"{{{inner}}}"
        return cast(Item, tomlkit.parse(f"v = {text}\n")["v"])
    if isinstance(value, str) and "\n" in value:
        literal = "'''" not in value and not any(ord(c) < 32 and c not in "\n\t" for c in value)
        return tomlkit.string(value, multiline=True, literal=literal)
    if isinstance(value, list | tuple):
        array = tomlkit.array()
        for item in value:
            array.append(toml_value(item, padded=padded))
        return array
    return cast(Item, tomlkit.item(value))


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else tomlkit.key(name).as_string()


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
    for key in ("input", "expect", "observed"):
        value = getattr(draft, key)
        if value is not None:
            table.add(key, toml_value(value))
    if draft.observed_from is not None:
        table.add("observed_from", draft.observed_from)
    if draft.observed_note is not None:
        table.add("observed_note", draft.observed_note)
    return table


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
    (and nothing else) into the file."""
    path = Path(path)
    document = _read_document(path)
    for entry in document.get("drafts", []):
        draft = observed.get(str(entry.get("name")))
        if draft is None:
            continue
        for key in ("observed", "observed_from", "observed_note"):
            value = getattr(draft, key)
            if key in entry:
                del entry[key]
            if value is not None:
                entry.add(key, toml_value(value) if key == "observed" else value)
    write_text_atomically(path, document.as_string())
    return load_drafts(path)


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


def names_on_file(files: Iterable[DraftFile]) -> set[str]:
    """Every draft name and discarded name across files."""
    return {d.name for f in files for d in f.drafts} | {n for f in files for n in f.discarded}

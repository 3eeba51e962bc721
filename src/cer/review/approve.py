"""Approve a draft: move it into the suite as a case, on purpose and on the record.

Approval is the human gate between a proposal and a case that counts. It takes one
draft from the drafts file and inserts it into ``evals.toml`` in the array it belongs
to, right after the cases that verify the same constraint (or at the end of that
array). The suite is edited through a style-preserving TOML library: every byte
outside the inserted case (its mark line, header and keys) stays as it was, comments
and layout included. Before the file is replaced, the new text is loaded as a suite
and the inserted case compared with the draft, so a suite is never left unreadable.

Each approval is an event: who (``--approver``, else git's ``user.name``, else the
login name), when, the case, its constraint, the hash of the approved text, and whether
the expectation came from an observation. The event is recorded in the history; the
mark above the case (see :mod:`cer.review.provenance`) carries it in the suite file.
"""

from __future__ import annotations

import datetime as dt
import difflib
import getpass
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import tomlkit
from tomlkit.items import AoT, Comment, Table, Trivia, Whitespace

from cer.history.records import ApprovalEvent
from cer.judge.compare import ERROR_INCLUDES, REJECTION_KEYS, operator_of
from cer.model import ARRAY_TO_CASE_CLASS, Case
from cer.review.derive import Draft
from cer.review.drafts import (
    drafts_path,
    load_drafts,
    remove_draft,
    toml_value,
    write_text_atomically,
)
from cer.review.provenance import case_text_hash, clean_name, marker_line
from cer.suite.loader import SuiteError, load_suite, parse_suite

__all__ = [
    "ApprovalError",
    "Approved",
    "approve_draft",
    "approver_name",
    "case_fields_of",
    "discard_draft",
    "insert_case",
    "operator_spelled",
    "rejection_proposal",
]


class ApprovalError(Exception):
    """A draft that cannot be approved as it stands, or a suite that cannot take it."""


@dataclass(frozen=True)
class Approved:
    """One approval done: the case now in the suite and the event to record."""

    case: Case
    event: ApprovalEvent


def approver_name(explicit: str | None = None, *, cwd: Path | None = None) -> str:
    """Who approves: ``explicit``, else git's ``user.name``, else the login name."""
    if explicit is not None and explicit.strip():
        return clean_name(explicit)
    try:
        found = subprocess.run(
            ["git", "config", "user.name"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=cwd,
            check=False,
        )
        if found.returncode == 0 and found.stdout.strip():
            return clean_name(found.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return clean_name(getpass.getuser())
    except (OSError, KeyError):
        return "unknown"


def operator_spelled(observed: Mapping[str, Any]) -> str | None:
    """Why ``observed`` cannot become an expectation as it stands, or None: a key the
    implementation reported that is spelled like an operator of an expect table
    (``output_contains``, ``x_max``, ``error_includes``, ``has_fields``: any name
    :func:`~cer.judge.compare.operator_of` knows). Written into the suite, such a key
    is judged as that operator for every implementation that does not report the key
    itself (``output`` containing ``""``), a check weaker than equality with what was
    observed; the format has no way to write it as a literal key, so it is refused.

    The one exception is the rejection cer proposes itself (:func:`rejection_proposal`):
    ``error_includes`` there holds the whole message observed, the check the format
    has for a rejection's message."""
    if rejection_proposal(observed):
        return None
    for key in observed:
        found = operator_of(key) if type(key) is str else None
        if found is not None:
            operator, base = found
            applied = f" to {base!r}" if base else ""
            return (
                f"the observed key {key!r} is spelled like the operator {operator.name!r}: "
                f"in the suite it would be judged as that operator{applied}, a weaker "
                "check than equality with what was observed; write the expectation "
                "in the drafts file by hand"
            )
    return None


def rejection_proposal(observed: Mapping[str, Any]) -> bool:
    """Whether ``observed`` is the expectation cer proposes for a rejected input:
    ``rejects = true``, with at most ``error_type`` and ``error_includes`` (the
    observed error's type and its whole, non-empty message) beside it."""
    if observed.get("rejects") is not True or not set(observed) <= REJECTION_KEYS:
        return False
    message = observed.get(ERROR_INCLUDES.name, "x")
    kind = observed.get("error_type", "x")
    return type(message) is str and message != "" and type(kind) is str and kind != ""


def case_fields_of(draft: Draft, *, use_observed: bool) -> dict[str, Any]:
    """The case an approved draft becomes, in suite key order; ApprovalError when the
    draft is not complete enough to be a case."""
    if draft.input is None:
        raise ApprovalError(
            f"draft {draft.name!r} has no input ({draft.enforceability}: {draft.why}); "
            "write one in the drafts file first"
        )
    if use_observed:
        if not draft.observed:
            note = f" ({draft.observed_note})" if draft.observed_note else ""
            raise ApprovalError(
                f"draft {draft.name!r} carries no observed value{note}; "
                "run `cer derive --impl ...` first"
            )
        refused = operator_spelled(draft.observed)
        if refused is not None:
            raise ApprovalError(f"draft {draft.name!r}: {refused}")
        expect: Mapping[str, Any] = draft.observed
    elif draft.expect:
        expect = draft.expect
    else:
        hint = " or give --use-observed" if draft.observed else ""
        raise ApprovalError(
            f"draft {draft.name!r} has no expectation; write expect in the drafts file{hint}"
        )
    fields: dict[str, Any] = {"name": draft.name, "category": draft.category}
    if draft.array == "adversarial":
        fields["severity"] = draft.severity or "error"
    if draft.description:
        fields["description"] = draft.description
    fields["input"] = dict(draft.input)
    fields["expect"] = dict(expect)
    fields["verifies"] = [draft.constraint]
    return fields


def _padded_style(source: str) -> bool:
    """Whether the suite writes inline tables as ``{ k = v }`` rather than ``{k = v}``."""
    padded = source.count("= { ")
    return padded > 0 and padded >= source.count("= {") - padded


def _case_table(fields: Mapping[str, Any], padded: bool) -> Table:
    table = tomlkit.table()
    for key, value in fields.items():
        table.add(key, toml_value(value, padded=padded))
    return table


def insert_case(
    source: str, array: str, constraint: str, fields: Mapping[str, Any], mark: str
) -> str:
    """``source`` with the case inserted, every other byte unchanged.

    The case goes after the last case of ``array`` that verifies ``constraint``, else
    after the array's last case; a missing array is added at the end of the file. The
    blank lines and comments that followed the case it is inserted after (a section
    heading, say) move below the new case, so they still introduce what they did.

    Only the stretch of the file from the chosen case's header to the next case header
    (or the end) is handed to the TOML library, which keeps that stretch exactly and
    adds the new table to it: a whole document whose case arrays are written in turns
    is not something the library can write back unchanged. The result is checked to
    differ from ``source`` by one inserted block and nothing else.
    """
    try:
        suite = parse_suite(source, Path("evals.toml"))
    except SuiteError as exc:
        raise ApprovalError(f"the suite cannot be loaded, fix it first:\n{exc}") from exc
    class_name = ARRAY_TO_CASE_CLASS[array]
    lines = [case.line for case in suite.cases]
    if any(line is None for line in lines):
        raise ApprovalError("the suite's case headers cannot be located; add the case by hand")
    starts = sorted(line for line in lines if line is not None)
    in_array = [case for case in suite.cases if case.case_class == class_name]
    anchor = None
    if in_array:
        anchor = in_array[-1]
        for case in in_array:
            if constraint in case.verifies:
                anchor = case
        first = cast(int, anchor.line)
    else:
        first = starts[-1] if starts else 1
    later = [line for line in starts if line > first]
    text_lines = source.splitlines(keepends=True)
    head = "".join(text_lines[: first - 1])
    stretch = "".join(text_lines[first - 1 : later[0] - 1] if later else text_lines[first - 1 :])
    tail = "".join(text_lines[later[0] - 1 :]) if later else ""
    try:
        fragment = tomlkit.parse(stretch)
    except tomlkit.exceptions.ParseError as exc:  # pragma: no cover - the suite loaded
        raise ApprovalError(f"the suite is not valid TOML: {exc}") from exc
    if fragment.as_string() != stretch:  # pragma: no cover - a library limit
        raise ApprovalError("the suite cannot be edited without changing it; add the case by hand")
    table = _case_table(fields, _padded_style(source))
    if anchor is None:
        lead = "\n" if stretch.endswith("\n") or not stretch else "\n\n"
        table.trivia.indent = f"{lead}{mark}\n"
        fragment.append(array, AoT([table]))
    else:
        entries = fragment.get(array)
        if not isinstance(entries, AoT) or len(entries) != 1:
            raise ApprovalError(
                f"{array} is not written as [[{array}]] tables here; add the case by hand"
            )
        previous: Table = entries[0]
        body = previous.value.body
        trailing: list[Any] = []
        while body and body[-1][0] is None and isinstance(body[-1][1], Whitespace | Comment):
            trailing.insert(0, body.pop())
        body.append((None, Whitespace("\n")))
        body.append((None, Comment(Trivia(comment_ws="", comment=mark, trail="\n"))))
        for key_item in trailing:
            table.value.body.append(key_item)
        entries.append(table)
    result = head + fragment.as_string() + tail
    if not _only_inserted(source, result):  # pragma: no cover - guarded above
        raise ApprovalError("the suite cannot be edited without changing it; add the case by hand")
    return result


def _only_inserted(before: str, after: str) -> bool:
    """Whether ``after`` is ``before`` with one block of lines inserted."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    changes = [
        op
        for op in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    return len(changes) == 1 and changes[0][0] == "insert"


def _now_iso(now_ms: int) -> str:
    moment = dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def approve_draft(
    suite_path: str | Path,
    name: str,
    *,
    approver: str,
    use_observed: bool = False,
    now_ms: int | None = None,
) -> Approved:
    """Move draft ``name`` into the suite; ApprovalError/DraftsError when it cannot be."""
    suite_path = Path(suite_path)
    drafts_file = drafts_path(suite_path)
    draft = load_drafts(drafts_file).get(name)
    fields = case_fields_of(draft, use_observed=use_observed)
    try:
        source = suite_path.read_text(encoding="utf-8")
        suite = load_suite(suite_path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ApprovalError(f"cannot read {suite_path}: {exc}") from exc
    except SuiteError as exc:
        raise ApprovalError(f"the suite cannot be loaded, fix it first:\n{exc}") from exc
    if any(case.name == name for case in suite.cases):
        raise ApprovalError(f"the suite already has a case named {name!r}; rename the draft")
    moment = now_ms if now_ms is not None else int(time.time() * 1000)
    # The hash goes into the mark, and the mark into the text: insert once without it
    # to learn the case exactly as the loader reads it, then with it.
    probe = insert_case(source, draft.array, draft.constraint, fields, "# cer: pending")
    case = _inserted(probe, suite_path, name)
    text_hash = case_text_hash(case)
    from_observation = use_observed
    mark = marker_line(approver, _now_iso(moment), text_hash, observed=from_observation)
    final = insert_case(source, draft.array, draft.constraint, fields, mark)
    case = _inserted(final, suite_path, name)
    if case_text_hash(case) != text_hash:  # pragma: no cover - same fields, same case
        raise ApprovalError("the inserted case does not read back as approved")
    write_text_atomically(suite_path, final)
    remove_draft(drafts_file, name, discard=False)
    event = ApprovalEvent(
        suite_path=str(suite_path),
        case_name=name,
        constraints=(draft.constraint,),
        approver=approver,
        approved_at_ms=moment,
        text_hash=text_hash,
        from_observation=from_observation,
        observed_from=draft.observed_from if from_observation else None,
    )
    return Approved(case, event)


def _inserted(text: str, suite_path: Path, name: str) -> Case:
    try:
        suite = parse_suite(text, suite_path)
    except SuiteError as exc:
        raise ApprovalError(f"the suite would not load with the case inserted:\n{exc}") from exc
    return suite.case(name)


def discard_draft(suite_path: str | Path, name: str) -> Draft:
    """Drop draft ``name`` and remember not to propose it again."""
    return remove_draft(drafts_path(suite_path), name, discard=True)

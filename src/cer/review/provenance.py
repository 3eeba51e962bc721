"""Where a case came from: written by hand, or approved from a draft (and by whom).

Approving a draft (see :mod:`cer.review.approve`) writes one comment line right above the
case's ``[[...]]`` header::

    # cer: approved by Ada Lovelace at 2026-12-01T10:40:00Z, sha256 3f2a9c1e0b7d4a51

with ``, expectation observed`` before the hash when the expectation was taken from an
observation. The hash is over the case's canonical text (:func:`case_text_hash`), so a
case edited after its approval is told apart from one approved as it stands. The mark
travels with the suite file, so a manifest written in CI, with no local history, still
says which cases a person approved; the history keeps the full event as well.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cer.model import Case, Suite
from cer.results import serialize
from cer.text.safetext import INVISIBLE_CHARS

__all__ = [
    "Origin",
    "Provenance",
    "case_text_hash",
    "marker_line",
    "read_provenance",
]

Origin = Literal["hand-written", "approved", "edited-after-approval"]

HASH_PREFIX = 16
"""Hex digits of the hash written in the mark (the history keeps all of them)."""

_MARKER = re.compile(
    r"^[ \t]*#[ \t]*cer: approved by (?P<who>.+?) at (?P<when>\S+?)"
    r"(?P<observed>, expectation observed)?, sha256 (?P<hash>[0-9a-f]{8,64})[ \t]*$"
)
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{INVISIBLE_CHARS}\ud800-\udfff]+")


@dataclass(frozen=True)
class Provenance:
    """One case's origin as its suite file records it."""

    origin: Origin
    approved_by: str | None = None
    approved_at: str | None = None
    from_observation: bool = False


def case_fields(case: Case) -> dict[str, Any]:
    """The parts of a case its text hash covers, as plain data."""
    return {
        "name": case.name,
        "case_class": case.case_class,
        "category": case.category,
        "description": case.description,
        "input": dict(case.input),
        "expect": dict(case.expect),
        "verifies": list(case.verifies),
        "tags": list(case.tags),
        "severity": case.severity,
    }


def case_text_hash(case: Case) -> str:
    """SHA-256 of the case's canonical text: sorted-key JSON of :func:`case_fields`."""
    data = serialize.value_to_json(case_fields(case))
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def clean_name(name: str) -> str:
    """A person's name fit for one comment line (no control, bidi or invisible
    characters, no lone surrogates)."""
    return " ".join(_UNSAFE.sub(" ", name).split()) or "unknown"


def marker_line(who: str, when_iso: str, text_hash: str, *, observed: bool) -> str:
    """The mark written above an approved case (without the line break)."""
    seen = ", expectation observed" if observed else ""
    digest = text_hash[:HASH_PREFIX]
    return f"# cer: approved by {clean_name(who)} at {when_iso}{seen}, sha256 {digest}"


def read_provenance(suite: Suite, text: str | None = None) -> Mapping[str, Provenance] | None:
    """Each case's provenance from the marks in the suite's text; None when the file
    is no longer the text the suite was loaded from (its hash differs)."""
    if text is None:
        try:
            raw = suite.path.read_bytes()
        except OSError:
            return None
        if hashlib.sha256(raw).hexdigest() != suite.content_hash:
            return None
        text = raw.decode("utf-8", "replace")
    lines = text.removeprefix("\ufeff").splitlines()
    found: dict[str, Provenance] = {}
    for case in suite.cases:
        mark = None
        if case.line is not None and case.line >= 2:
            mark = _MARKER.match(lines[case.line - 2]) if case.line - 2 < len(lines) else None
        if mark is None:
            found[case.name] = Provenance("hand-written")
            continue
        same = case_text_hash(case).startswith(mark["hash"])
        found[case.name] = Provenance(
            "approved" if same else "edited-after-approval",
            approved_by=mark["who"],
            approved_at=mark["when"],
            from_observation=mark["observed"] is not None,
        )
    return found

"""Combine the results of a sharded run (``cer run --shard I/N``) into one run.

Each shard's ``--format json`` document lists every case of the suite: the cases of its
own slice with their results, the others skipped with the reason ``in another shard``.
:func:`merge_runs` takes, for every case, the result of the one shard that owns it,
and refuses anything that would make the combined run say more than the shards did:
documents of different suites or implementations, a case two shards ran, a case no
shard ran. The merged run is an ordinary :class:`~cer.model.RunResult`, so every
report format renders it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from cer.engine.options import OTHER_SHARD
from cer.model import CaseResult, RunConditions, RunResult, Status, Summary
from cer.results import jsonlines, serialize

__all__ = [
    "MergeError",
    "Shard",
    "merge_files",
    "merge_runs",
    "owned_results",
    "read_results",
    "shard_summary",
]

_SHOWN = 5
"""How many case names an error lists before it says how many more there are."""


class MergeError(ValueError):
    """The documents cannot be combined into one run; the message says why."""


@dataclass(frozen=True)
class Shard:
    """One shard's run and where it came from (for messages)."""

    name: str
    run: RunResult


def owned_results(run: RunResult) -> tuple[CaseResult, ...]:
    """The results of the cases this run was responsible for: every case but those it
    left to another shard. For an unsharded run, all of them."""
    return tuple(result for result in run.results if not _elsewhere(result))


def shard_summary(run: RunResult) -> Summary:
    """The counts of the cases a shard ran: what its own exit code should reflect,
    since the cases left to the other shards are not its business."""
    return Summary.of(owned_results(run))


def _elsewhere(result: CaseResult) -> bool:
    return result.status is Status.SKIPPED and result.reason == OTHER_SHARD


def read_results(path: str | Path) -> RunResult:
    """The run in a ``--format json`` document; MergeError naming the file otherwise."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MergeError(f"{name}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise MergeError(f"{name}: not UTF-8 text, so not a cer results document") from None
    if jsonlines.looks_like_lines(text):
        try:
            read = jsonlines.read_lines(text)
        except (KeyError, TypeError, ValueError) as exc:
            detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise MergeError(f"{name}: not a cer JSON-lines results file: {detail}") from None
        if read.run is None:
            raise MergeError(f"{name}: {read.problem}")
        return read.run
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MergeError(f"{name}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MergeError(f"{name}: not a cer results document (--format json)")
    try:
        return serialize.run_from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise MergeError(f"{name}: not a cer results document (--format json): {detail}") from None


def merge_files(paths: Sequence[str | Path]) -> RunResult:
    """Read every document and merge them; see :func:`merge_runs`."""
    return merge_runs([Shard(str(path), read_results(path)) for path in paths])


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(repr(name) for name in names[:_SHOWN])
    more = len(names) - _SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _check_uniform(shards: Sequence[Shard], what: str, values: Sequence[str]) -> None:
    """MergeError unless every shard has the same value; ``what`` names the values."""
    distinct = sorted(set(values))
    if len(distinct) > 1:
        pairs = zip(shards, values, strict=True)
        listing = "; ".join(f"{shard.name}: {value or '(none)'}" for shard, value in pairs)
        raise MergeError(f"the documents come from different {what} ({listing})")


def _conditions(shards: Sequence[Shard]) -> tuple[RunConditions | None, list[str]]:
    """The conditions of the merged run, and notes on those the shards differ in.

    The conditions that change what a result means (isolation, sandbox, network,
    timeout, category remaps, the case selection) must be the same in every document
    that records them; the platform, the paths lent, the number of workers and the
    versions of cer and Python may differ, and the merged run then keeps the first
    document's with a note listing them all. The merged run's selection is the shards'
    without the shard: it holds every shard."""
    recorded = [(shard, shard.run.conditions) for shard in shards]
    known = [(shard, c) for shard, c in recorded if c is not None]
    if not known:
        return None, []
    if len(known) != len(recorded):
        missing = [shard.name for shard, c in recorded if c is None]
        raise MergeError(f"{_names(missing)}: no run conditions, so they cannot be checked")
    names = [shard for shard, _ in known]
    every = [c for _, c in known]
    _check_uniform(names, "isolation modes", [c.isolation for c in every])
    _check_uniform(names, "sandboxes", [c.sandbox for c in every])
    _check_uniform(names, "network rules", [c.network for c in every])
    _check_uniform(names, "timeouts", [f"{c.timeout:g} s" for c in every])
    _check_uniform(names, "category remaps", [repr(c.category_remaps) for c in every])
    whole = [replace(c.selection, shard="") for c in every]
    _check_uniform(names, "case selections", [selection.describe() for selection in whole])
    notes = []
    for what, values in (
        ("platforms", [c.platform for c in every]),
        ("lent paths", [repr((c.paths, c.sandbox_read)) for c in every]),
        ("workers", [str(c.jobs) for c in every]),
        ("cer versions", [c.cer_version for c in every]),
        ("Python versions", [c.python_version for c in every]),
    ):
        if len(set(values)) > 1:
            listing = "; ".join(
                f"{shard.name}: {v}" for shard, v in zip(names, values, strict=True)
            )
            notes.append(f"the shards ran with different {what} ({listing})")
    # The merged run is of every shard: its selection is the shards' own, without one.
    return replace(every[0], selection=whole[0]), notes


def _implementation_id(shards: Sequence[Shard]) -> str:
    """The implementation id every shard agrees on.

    A shard that started no worker (nothing of its slice needed running) reports the
    bare ``MODULE:ATTR`` without a source hash; it agrees with any hashed id of the
    same name. Two different hashes never agree: those shards ran different code.
    """
    names = [
        shard.run.implementation or shard.run.implementation_id.split("@")[0] for shard in shards
    ]
    _check_uniform(shards, "implementations", names)
    hashed = [shard for shard in shards if "@" in shard.run.implementation_id]
    if not hashed:
        return shards[0].run.implementation_id
    _check_uniform(hashed, "implementation ids", [s.run.implementation_id for s in hashed])
    return hashed[0].run.implementation_id


def merge_runs(shards: Sequence[Shard | RunResult]) -> RunResult:
    """One run made of the shards' runs; MergeError when they do not fit together.

    Refused: no documents; documents of different suites (suite hash), different
    format versions, or different implementations (name or source hash); documents
    that list different cases; a case that more than one document ran; a case that no
    document ran. Accepted documents give, for each case in declared order, the result
    of the document that ran it. The merged run starts when the first shard started,
    completes when the last one completed, and has an id derived from the shards'
    ids, so merging the same documents twice gives the same run.
    """
    given = [
        item if isinstance(item, Shard) else Shard(f"document {n}", item)
        for n, item in enumerate(shards, start=1)
    ]
    if not given:
        raise MergeError("there is nothing to merge: give the shards' result documents")
    hashes = [shard.run.suite_hash for shard in given]
    if not all(hashes):
        missing = [shard.name for shard in given if not shard.run.suite_hash]
        raise MergeError(f"{_names(missing)}: no suite hash, so the suite cannot be checked")
    _check_uniform(given, "suites (suite hashes)", hashes)
    _check_uniform(given, "suite format versions", [s.run.format_version for s in given])
    implementation_id = _implementation_id(given)
    conditions, condition_notes = _conditions(given)

    first = given[0]
    order = [result.case_name for result in first.run.results]
    if len(set(order)) != len(order):
        raise MergeError(f"{first.name}: a case appears twice")
    for shard in given[1:]:
        names = [result.case_name for result in shard.run.results]
        if names != order:
            extra = [name for name in names if name not in set(order)]
            absent = [name for name in order if name not in set(names)]
            detail = (
                f"it has {_names(extra)} that {first.name} has not"
                if extra
                else f"it lacks {_names(absent)}"
                if absent
                else "the cases are in another order"
            )
            raise MergeError(f"{shard.name} lists other cases than {first.name}: {detail}")

    owners: dict[str, Shard] = {}
    chosen: dict[str, CaseResult] = {}
    overlaps: dict[tuple[str, str], list[str]] = {}
    for shard in given:
        for result in shard.run.results:
            if _elsewhere(result):
                continue
            owner = owners.get(result.case_name)
            if owner is not None:
                overlaps.setdefault((owner.name, shard.name), []).append(result.case_name)
                continue
            owners[result.case_name] = shard
            chosen[result.case_name] = result
    if overlaps:
        parts = [f"{_names(names)} ran in both {a} and {b}" for (a, b), names in overlaps.items()]
        count = sum(len(names) for names in overlaps.values())
        raise MergeError(
            f"{count} case{'s' if count != 1 else ''} ran in more than one document: "
            + "; ".join(parts)
        )
    missing = [name for name in order if name not in chosen]
    if missing:
        plural = "s" if len(missing) != 1 else ""
        raise MergeError(
            f"{len(missing)} case{plural} ran in no document ({_names(missing)}): "
            "the results of a shard are missing"
        )

    runs = [shard.run for shard in given]
    notes: list[str] = []
    for run in runs:
        for note in run.notes:
            if not note.startswith("shard ") and note not in notes:
                notes.append(note)
    notes.extend(condition_notes)
    notes.append(f"merged from {len(runs)} result document{'s' if len(runs) != 1 else ''}")
    run_id = hashlib.sha256(
        "\n".join(sorted(run.run_id for run in runs)).encode("utf-8")
    ).hexdigest()[:32]
    return RunResult(
        run_id=run_id,
        target_module=first.run.target_module,
        implementation_id=implementation_id,
        started_at_ms=min(run.started_at_ms for run in runs),
        completed_at_ms=max(run.completed_at_ms for run in runs),
        results=tuple(chosen[name] for name in order),
        suite_path=first.run.suite_path,
        suite_hash=first.run.suite_hash,
        format_version=first.run.format_version,
        implementation=first.run.implementation,
        notes=tuple(notes),
        conditions=conditions,
    )

"""``cer derive``, ``cer approve`` and ``cer discard``: the headless review loop.

``derive`` proposes drafts for the constraints no case verifies and writes them to the
drafts file beside the suite; ``approve`` moves a reviewed draft into the suite and
records the approval; ``discard`` drops a draft for good. See docs/derive.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cer.config import (
    SUITE_HELP,
    UsageError,
    configured_timeout,
    find_project_config,
    resolve_suite,
)
from cer.constraints import CoverageError, suite_coverage
from cer.engine.options import DEFAULT_TIMEOUT, RunOptions
from cer.history.database import History, default_history_path
from cer.history.records import HistoryError
from cer.suite.loader import SuiteError, load_suite
from cer.text.safetext import for_json, for_terminal

__all__ = ["add_review_commands", "cmd_approve", "cmd_derive", "cmd_discard"]

if TYPE_CHECKING:
    from cer.review.derive import Derivation, Draft

# The commands' own modules (the drafts file, the suite editor with tomlkit, the observing
# run) are imported by each command when it runs: every `cer` start builds this parser.


def add_review_commands(commands: Any) -> None:
    """Add the subcommands, each with its handler, to ``commands``."""
    derive_parser = commands.add_parser(
        "derive",
        help="propose draft cases for the constraints no case verifies",
        description="Read the constraints of the module's commonsformat.md and the suite, "
        "and write drafts for every constraint no case verifies to the drafts file beside "
        "the suite (evals.drafts.toml), never to the suite. Each draft is labelled "
        "mechanical, needs-input or not-mechanical. Drafts never count in a run.",
    )
    derive_parser.add_argument("suite", nargs="?", type=Path, help=f"the evals.toml ({SUITE_HELP})")
    derive_parser.add_argument(
        "--all",
        dest="every",
        action="store_true",
        help="also propose more drafts for constraints that have cases",
    )
    derive_parser.add_argument(
        "--impl",
        metavar="MODULE:ATTR",
        help="run the drafts without an expectation and keep what the implementation "
        "did as an observed proposal",
    )
    derive_parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"per draft, with --impl (default: timeout in [tool.cer], else {DEFAULT_TIMEOUT:g})",
    )
    derive_parser.add_argument("--format", choices=("text", "json"), default="text")

    approve = commands.add_parser(
        "approve",
        help="move reviewed drafts into the suite, on the record",
        description="Move each named draft into the suite, after the cases that verify "
        "the same constraint, keeping every other byte of the suite as it was, and record "
        "who approved it, when, and the hash of the approved text.",
    )
    approve.add_argument("names", nargs="+", metavar="NAME")
    _suite_option(approve)
    approve.add_argument(
        "--approver", metavar="WHO", help="who approves (default: git user.name, else login)"
    )
    approve.add_argument(
        "--use-observed",
        action="store_true",
        help="take the observed value as the expectation (from cer derive --impl)",
    )
    where = approve.add_mutually_exclusive_group()
    where.add_argument("--history", type=Path, metavar="PATH", help="the history database")
    where.add_argument("--no-history", action="store_true", help="do not record the events")

    discard = commands.add_parser(
        "discard",
        help="drop drafts; derive will not propose them again",
        description="Remove each named draft from the drafts file and remember it, so "
        "that cer derive does not propose it again.",
    )
    discard.add_argument("names", nargs="+", metavar="NAME")
    _suite_option(discard)
    derive_parser.set_defaults(handler=cmd_derive)
    approve.set_defaults(handler=cmd_approve)
    discard.set_defaults(handler=cmd_discard)


def _suite_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--suite",
        type=Path,
        metavar="SUITE",
        help=f"the evals.toml ({SUITE_HELP})",
    )


def _error(message: str) -> None:
    sys.stderr.write(f"cer: error: {for_terminal(message)}\n")


def _warning(message: str) -> None:
    sys.stderr.write(f"cer: warning: {for_terminal(message)}\n")


def _suite_path(given: Path | None) -> Path:
    return resolve_suite(given, find_project_config())


def _draft_line(draft: Draft) -> str:
    line = _shown(f"  + {draft.name}  [{draft.standing}]  {draft.constraint}: {draft.why}")
    if draft.observed is not None:
        line += f"\n      observed: {_inline(draft.observed)} (from {_shown(draft.observed_from)})"
        if not draft.expect:
            approve = _shown(f"cer approve {draft.name} --use-observed")
            line += f"\n      to take it as the expectation: {approve}"
    elif draft.observed_note:
        line += f"\n      nothing observed: {_shown(draft.observed_note)}"
    return line


def _shown(text: str | None) -> str:
    """One line of the drafts file or of what an implementation did, for a terminal:
    control and bidi characters as escapes (cer.text.safetext), never acting on it."""
    return for_terminal(str(text), multiline=False)


def _inline(value: Any) -> str:
    return for_json(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))


def render_derivation(
    derivation: Derivation,
    added: list[Draft],
    on_file: int,
    path: Path,
    observed: list[Draft] | None = None,
    checked: list[tuple[str, str, str]] | None = None,
    impl: str = "",
    updated: Sequence[Draft] = (),
    drafts_on_file: Sequence[Draft] = (),
) -> str:
    """The text ``cer derive`` prints; ``updated`` are the drafts on file that followed
    a change of their constraint's text, ``observed`` those run against ``impl`` for
    an expectation, ``checked`` the complete drafts run as written against it (name,
    status, reason). With ``impl``, it always says what was observed, if only that
    there was nothing to run."""
    lines = [derivation.headline()]
    if added:
        lines.append(f"new drafts ({len(added)}):")
        lines.extend(_draft_line(d) for d in added)
    else:
        lines.append("no new drafts")
    if updated:
        lines.append(f"updated from the constraint's text ({len(updated)}):")
        lines.extend(_draft_line(d).replace("  + ", "  ~ ", 1) for d in updated)
    fresh = {d.name for d in added}
    seen = [d for d in observed or () if d.name not in fresh]
    if seen:
        lines.append(f"observed ({len(seen)}):")
        lines.extend(_draft_line(d) for d in seen)
    elif impl and not observed:
        waiting = sum(1 for d in drafts_on_file if d.input is None)
        if waiting or not checked:
            lines.append(
                _shown(
                    f"observed against {impl}: nothing, no draft on file has an input and no "
                    "expectation"
                    + (
                        f" ({waiting} need an input first: write it in {path.name}, then run "
                        "cer derive --impl again)"
                        if waiting
                        else ""
                    )
                )
            )
    if checked:
        lines.append(f"run as written against {impl} ({len(checked)}):")
        for name, status, reason in checked:
            # The reason holds what the implementation said: shown, never obeyed.
            first = for_terminal(" ".join(reason.splitlines()[:1])[:300], multiline=False)
            lines.append(f"  {name}: {status}" + (f": {first}" if first else ""))
    repair = derivation.needs_repair
    if repair:
        lines.append(f"needs repair ({len(repair)}):")
        lines.extend(_shown(f"  {a.constraint} [{a.label}]: {a.why}") for a in repair)
    lines.append(_shown(f"{on_file} draft{'s' if on_file != 1 else ''} in {path}"))
    return "\n".join(lines) + "\n"


def _draft_json(draft: Draft) -> dict[str, Any]:
    return {
        "name": draft.name,
        "constraint": draft.constraint,
        "enforceability": draft.standing,
        "why": draft.why,
        "array": draft.array,
        "category": draft.category,
        "input": draft.input,
        "expect": draft.expect,
        "observed": draft.observed,
        "observed_from": draft.observed_from,
        "observed_note": draft.observed_note,
    }


def cmd_derive(args: argparse.Namespace) -> int:
    from cer.review.derive import derive
    from cer.review.drafts import (
        DraftsError,
        add_drafts,
        drafts_path,
        follow_text,
        load_drafts,
        set_observed,
    )
    from cer.review.observe import observe, run_drafts

    try:
        suite = load_suite(_suite_path(args.suite))
        coverage = suite_coverage(suite)
        if coverage is None:
            raise UsageError(
                f"no commonsformat.md beside {suite.path}: there are no constraints to "
                "derive drafts from"
            )
        path = drafts_path(suite.path)
        before = load_drafts(path)
        derivation = derive(suite, coverage, every=args.every, skip=before.discarded)
        present = {d.name for d in before.drafts}
        added = [d for d in derivation.drafts if d.name not in present]
        # Drafts already on file follow their constraint's text when the prose changed.
        _, updated = follow_text(path, derivation.drafts)
        after = add_drafts(path, added)
        observed_drafts: list[Draft] = []
        checked: list[tuple[str, str, str]] = []
        if args.impl:
            timeout = configured_timeout(args.timeout, find_project_config())
            options = RunOptions(impl=args.impl, timeout=timeout)
            observed = observe(suite, after.drafts, options, args.impl)
            ran = {
                d.name: d
                for d, old in zip(observed, after.drafts, strict=True)
                if old.input is not None and not old.expect
            }
            changed = {name: d for name, d in ran.items() if d != after.get(name)}
            if changed or any(d.standing != d.enforceability for d in ran.values()):
                after = set_observed(path, ran)
            # Every draft run for an expectation is reported, changed or not.
            observed_drafts = [after.get(name) for name in ran]
            added = [after.get(d.name) for d in added]
            updated = [after.get(d.name) for d in updated]
            # Complete drafts are run as written: what the implementation did is said
            # for them too, as a status, never written into the drafts file.
            complete = [d for d in after.drafts if d.is_complete]
            for found in run_drafts(suite, complete, options) if complete else ():
                if found.result is not None:
                    result = found.result
                    checked.append((found.draft, result.status.value, result.reason or ""))
    except (UsageError, SuiteError, CoverageError, DraftsError) as exc:
        _error(str(exc))
        return 2
    if args.format == "json":
        document = {
            "suite": str(suite.path),
            "drafts_file": str(path),
            "constraints_total": derivation.total,
            "constraints_enforceable": derivation.enforceable,
            "headline": derivation.headline(),
            "needs_repair": [
                {"constraint": a.constraint, "label": a.label, "why": a.why}
                for a in derivation.needs_repair
            ],
            "new_drafts": [d.name for d in added],
            "updated_drafts": [d.name for d in updated],
            "observed": [d.name for d in observed_drafts],
            "checked": [
                {"name": name, "status": status, "reason": reason or None}
                for name, status, reason in checked
            ],
            "drafts": [_draft_json(d) for d in after.drafts],
        }
        text = json.dumps(document, indent=2, ensure_ascii=False, default=str)
        sys.stdout.write(for_json(text) + "\n")
    else:
        sys.stdout.write(
            render_derivation(
                derivation,
                added,
                len(after.drafts),
                path,
                observed_drafts,
                checked,
                args.impl,
                updated,
                after.drafts,
            )
        )
    return 0


def cmd_approve(args: argparse.Namespace) -> int:
    from cer.review.approve import ApprovalError, approve_draft, approver_name
    from cer.review.drafts import DraftsError

    try:
        suite_path = _suite_path(args.suite)
    except UsageError as exc:
        _error(str(exc))
        return 2
    who = approver_name(args.approver, cwd=suite_path.parent)
    history: History | None = None
    if not args.no_history:
        try:
            history = History.open(args.history or default_history_path(suite_path))
        except HistoryError as exc:
            _warning(f"history: {exc}; approvals are not recorded")
    failed = False
    try:
        for name in args.names:
            try:
                done = approve_draft(suite_path, name, approver=who, use_observed=args.use_observed)
            except (ApprovalError, DraftsError) as exc:
                _error(str(exc))
                failed = True
                continue
            seen = " (expectation from an observation)" if done.event.from_observation else ""
            sys.stdout.write(
                _shown(
                    f"approved {name} into {suite_path} by {who}{seen}, verifies "
                    f"{', '.join(done.event.constraints)}"
                )
                + "\n"
            )
            if history is not None:
                try:
                    history.record_approval(done.event)
                except HistoryError as exc:
                    _warning(f"history: {exc}; approval not recorded")
    finally:
        if history is not None:
            history.close()
    return 1 if failed else 0


def cmd_discard(args: argparse.Namespace) -> int:
    from cer.review.approve import discard_draft
    from cer.review.drafts import DraftsError

    try:
        suite_path = _suite_path(args.suite)
    except UsageError as exc:
        _error(str(exc))
        return 2
    failed = False
    for name in args.names:
        try:
            discard_draft(suite_path, name)
        except DraftsError as exc:
            _error(str(exc))
            failed = True
            continue
        sys.stdout.write(_shown(f"discarded {name}") + "\n")
    return 1 if failed else 0

"""``cer baseline update``: rewrite a known-failures file from the last run.

The run is the newest recorded one of the suite (``--implementation`` picks the newest
of one implementation), or the results of ``--results FILE`` (a ``--format json``
document, a merged one say). Stale entries go; new failures are added only with
``--add-new``, so a regression is never baselined by accident: without it they are
listed and the command exits 1, after writing the rest.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cer.cli.exits import ExitCode, print_error
from cer.config import UsageError, find_project_config
from cer.history.records import HistoryError
from cer.model import RunResult
from cer.results.baseline import BaselineError, describe_update, update_baseline
from cer.suite.loader import SuiteError, load_suite


def add_baseline_command(commands: Any) -> None:
    """Add ``cer baseline`` (with its one action, ``update``) to the subcommands."""
    baseline = commands.add_parser(
        "baseline",
        help="rewrite a known-failures baseline from the last run",
        description="Rewrite a known-failures file (cer run --baseline) from the last "
        "run: entries whose cases now pass are removed, glob entries are narrowed to the "
        "cases still failing, reasons and comments are kept. New failures are added only "
        "with --add-new. Exit 0 when the file now matches the run, 1 when failures were "
        "left out, 2 on bad input.",
    )
    actions = baseline.add_subparsers(dest="baseline_action", metavar="ACTION", required=True)
    update = actions.add_parser("update", help="rewrite the baseline from the last run")
    update.set_defaults(handler=cmd_baseline)
    update.add_argument(
        "suite", nargs="?", type=Path, help="the evals.toml (default: [tool.cer] suite)"
    )
    update.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="the known-failures file (default: [tool.cer] baseline)",
    )
    source = update.add_mutually_exclusive_group()
    source.add_argument(
        "--results",
        type=Path,
        metavar="RESULTS.json",
        help="take the run from a --format json document (e.g. cer merge's) instead of the history",
    )
    source.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help="the history database (default: .cer/history.sqlite beside the suite)",
    )
    update.add_argument(
        "--implementation",
        metavar="LABEL",
        help="the implementation whose entries to update (its label, or MODULE:ATTR); "
        "new entries name it",
    )
    update.add_argument(
        "--add-new",
        action="store_true",
        help="also add the run's failures the file does not list (and correct the "
        "status of listed ones); creates the file if missing",
    )
    update.add_argument(
        "--dry-run", action="store_true", help="print the new file instead of writing it"
    )


def cmd_baseline(args: argparse.Namespace) -> int:
    try:
        config = find_project_config()
    except UsageError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    suite_path = args.suite if args.suite is not None else config.path_value("suite")
    if suite_path is None and Path("evals.toml").is_file():
        suite_path = Path("evals.toml")
    baseline_path = args.baseline if args.baseline is not None else config.path_value("baseline")
    if suite_path is None:
        print_error("no suite given: pass the path to an evals.toml, or set suite in [tool.cer]")
        return ExitCode.USAGE
    if baseline_path is None:
        print_error("no baseline given: pass --baseline FILE, or set baseline in [tool.cer]")
        return ExitCode.USAGE
    try:
        suite = load_suite(suite_path)
    except SuiteError as exc:
        print_error(str(exc))
        return ExitCode.USAGE
    run = _last_run(args, suite.path)
    if run is None:
        return ExitCode.USAGE
    try:
        update = update_baseline(
            baseline_path, suite, run, add_new=args.add_new, label=args.implementation
        )
    except BaselineError as exc:
        print_error(f"baseline: {exc}")
        return ExitCode.USAGE
    if args.dry_run:
        sys.stdout.write(update.text)
    else:
        from cer.reports import write_report  # written whole, as reports are

        try:
            write_report(update.text, baseline_path)
        except OSError as exc:
            print_error(f"cannot write {baseline_path}: {exc}")
            return ExitCode.USAGE
    out = sys.stderr if args.dry_run else sys.stdout
    for line in describe_update(update):
        out.write(f"{line}\n")
    if not any((update.removed, update.narrowed, update.added, update.changed, update.refused)):
        out.write(f"{baseline_path}: nothing to change for run {run.run_id[:8]}\n")
    if update.refused:
        print_error(
            f"{len(update.refused)} failing case(s) are not in the baseline: fix them, or "
            "run again with --add-new to list them (and say why in each reason)"
        )
        return ExitCode.FAILED
    return ExitCode.OK


def _last_run(args: argparse.Namespace, suite_path: Path) -> RunResult | None:
    """The run to update from; None after printing why there is none."""
    if args.results is not None:
        from cer.results.merge import MergeError, read_results

        try:
            return read_results(args.results)
        except MergeError as exc:
            print_error(f"baseline: {exc}")
            return None
    from cer.history.database import History, default_history_path

    path = args.history or default_history_path(suite_path)
    try:
        with History.open(path, create=False) as history:
            records = history.runs(None, suite_path=suite_path)
            wanted = args.implementation
            for record in records:
                given = record.implementation or record.implementation_id.split("@")[0]
                if wanted is None or wanted == given or _label_of(given) == wanted:
                    return history.load_run(record.run_id)
    except HistoryError as exc:
        print_error(f"baseline: history: {exc}; pass --results RESULTS.json instead")
        return None
    which = f" of {args.implementation}" if args.implementation else ""
    print_error(f"baseline: no recorded run{which} of {suite_path} in {path}; run it first")
    return None


def _label_of(given: str) -> str:
    from cer.engine.kinds import guess_kind
    from cer.results.labels import short_label

    return short_label(guess_kind(given).name, given)

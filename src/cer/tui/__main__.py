"""``cer-tui``: the command line of the terminal UI; arguments mirror ``cer run``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cer import config, process_tree
from cer.history.database import default_history_path
from cer.model import Suite
from cer.results.baseline import Baseline, BaselineError, load_baseline, unmatched_entries
from cer.suite.loader import SuiteError, load_suite
from cer.tui.app import create_app
from cer.tui.state.themes import DEFAULT_THEME, ThemeError, find_themes


def build_parser() -> argparse.ArgumentParser:
    """The ``cer run`` arguments plus watching and theme."""
    parser = argparse.ArgumentParser(
        prog="cer-tui",
        description="Watch a suite and its implementation; rerun on every change and show "
        "each case's latest result.",
    )
    config.add_run_arguments(parser)
    ui = parser.add_argument_group("terminal UI")
    ui.add_argument(
        "--watch",
        dest="watch",
        action="append",
        default=[],
        metavar="PATH",
        help="also rerun when PATH (a file or folder) changes (repeatable)",
    )
    ui.add_argument(
        "--no-watch",
        dest="no_watch",
        action="store_true",
        help="run once and stay open; r reruns",
    )
    ui.add_argument(
        "--theme",
        metavar="NAME",
        default=None,
        help=f"colour theme: {_theme_names()} (default {DEFAULT_THEME}; t switches while running)",
    )
    history = parser.add_argument_group("history")
    where = history.add_mutually_exclusive_group()
    where.add_argument(
        "--history",
        type=Path,
        metavar="PATH",
        help="record every finished run in this database (default: .cer/history.sqlite "
        "beside the suite)",
    )
    where.add_argument(
        "--no-history",
        action="store_true",
        help="record nothing; no flaky marks, and R before the first run has nothing to use",
    )
    return parser


def _theme_names() -> str:
    """The themes' names for the help; a broken theme file is reported when it is used."""
    try:
        return ", ".join(find_themes()) or DEFAULT_THEME
    except ThemeError:
        return DEFAULT_THEME


def protect_history(resolved: config.ResolvedRun, history: Path | None) -> config.ResolvedRun:
    """``resolved`` with the history database added to what the sandbox keeps the
    implementation away from: its reasons hold the expectations of failed cases. (A
    history in ``.cer/`` is kept away anyway; ``--history PATH`` may be elsewhere.)"""
    if history is None:
        return resolved
    path = str(Path(history).resolve())
    implementations = tuple(
        replace(o, protected=(*o.protected, path)) for o in resolved.implementations
    )
    return replace(resolved, options=implementations[0], implementations=implementations)


def read_baseline(path: Path | None, suite: Suite | None) -> Baseline | str | None:
    """The known-failures file (``--baseline`` or ``[tool.cer] baseline``) read and
    checked as ``cer run`` checks it before anything runs, or why it cannot be used
    (a malformed file, an entry naming no case of the suite, each naming file and
    line); None without one. With a suite that does not load (None), the entries are
    checked against it once it does (:meth:`Session.unmatched_entries`)."""
    if path is None:
        return None
    try:
        baseline = load_baseline(path)
    except BaselineError as error:
        return f"baseline: {error}"
    if suite is None:
        return baseline
    problems = unmatched_entries(baseline, suite)
    if problems:
        return f"baseline: {problems[0]}; remove the entry or correct its case"
    return baseline


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments, merge ``[tool.cer]``, run the app; 2 on a usage error."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        os.getcwd()
    except OSError as exc:  # every path of the run is relative to it
        parser.error(
            f"the working directory cannot be read ({exc.strerror}): it was removed or made "
            "unreadable; change to a folder that exists and run again"
        )
    try:
        resolved = config.resolve_run(args)
    except config.UsageError as error:
        parser.error(str(error))
    project = resolved.config
    theme = args.theme or project.values.get("theme") or DEFAULT_THEME
    try:
        themes = find_themes()
    except ThemeError as error:
        parser.error(str(error))
    if theme not in themes:
        parser.error(f"unknown theme {theme!r}; choose from {', '.join(themes)}")
    extra: list[Path] = [*project.paths_value("watch"), *(Path(p) for p in args.watch)]
    if not resolved.suite.is_file():
        parser.error(f"no suite at {resolved.suite}")
    try:
        loaded: Suite | None = load_suite(resolved.suite)
    except SuiteError:
        loaded = None  # the app shows the loader's error in its banner, and reloads on a fix
    cases = () if loaded is None else loaded.cases
    unmatched = resolved.options.selection.unmatched(cases) if cases else None
    if unmatched is not None:
        parser.error(f"{unmatched} ({resolved.suite})")
    baseline = read_baseline(resolved.baseline, loaded)
    if isinstance(baseline, str):
        parser.error(baseline)
    held: dict[str, Any] = {  # what the verdict is held against, for the runs' conditions
        "baseline": "" if baseline is None else str(baseline.path),
        "baseline_sha256": "" if baseline is None else baseline.sha256,
        "require_coverage": resolved.require_coverage,
    }
    resolved = replace(
        resolved,
        options=replace(resolved.options, **held),
        implementations=tuple(replace(o, **held) for o in resolved.implementations),
    )
    history = None if args.no_history else args.history or default_history_path(resolved.suite)
    resolved = protect_history(resolved, history)
    app = create_app(
        resolved.suite,
        resolved.options,
        watch=not args.no_watch,
        theme=str(theme),
        extra_watch=extra,
        history=history,
        implementations=resolved.implementations,
        labels=resolved.labels,
        baseline=baseline,
    )
    # Like cer run: the program adopts the orphans of everything below it, so that a
    # daemon a case or a harness left (a double fork, setsid) is still its own to end.
    # Safe here because one run cycle runs at a time (RunController._one_run), and
    # whatever is left when the app has quit is ended below.
    process_tree.adopt_orphans()
    app.run()
    app.control.cancel()
    app.control.wait_for_runs(15.0)
    process_tree.end_strays(())
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())

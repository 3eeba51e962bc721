"""The pytest plugin: every case of an eval suite as a pytest item, run by cer's engine.

Registered through the ``pytest11`` entry point, so it is loaded in every pytest run of
an environment where cer is installed; it does nothing unless a suite is named on the
command line, listed in ``[tool.cer] pytest_suites``, or given with a cer option (see
docs/pytest.md). Collection makes one item per case; execution never judges anything
itself: the first item of a suite that runs in a process runs the cases of every item
of that suite the process still has to run, in one :func:`cer.engine.runner.run_suite` call,
and each item then reports its case's result. cer's ``pass``, ``fail``, ``errored`` and
``skipped`` become pytest's passed, failed, error and skipped, one to one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
import zlib
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from cer import process_tree
from cer.config import (
    ProjectConfig,
    UsageError,
    find_project_config,
    history_max_bytes,
    resolve_run,
)
from cer.constraints import Coverage, CoverageError, suite_coverage
from cer.engine.kinds import KINDS
from cer.engine.options import (
    DEFAULT_ISOLATION,
    DEFAULT_TIMEOUT,
    ISOLATION_MODES,
    NETWORK_MODES,
    SANDBOX_MODES,
    RunOptions,
)
from cer.engine.python.workerproc import WarmWorkers
from cer.history.database import History, default_history_path
from cer.history.records import NOT_SELECTED, HistoryError
from cer.model import Case, CaseResult, RunResult, Status, Suite
from cer.pytest_plugin import outcomes
from cer.pytest_plugin import suite as suite_module
from cer.pytest_plugin.outcomes import (
    Logged,
    Mismatch,
    Outcome,
    Pinned,
    expected_outcome,
    mismatch_text,
    mismatches_of,
    terminal_phases,
)
from cer.pytest_plugin.suite import (
    CaseErrored,
    CaseFailed,
    SuiteState,
    failure_text,
    merge_process_runs,
)
from cer.reports import text as text_report
from cer.results import serialize
from cer.results.baseline import (
    Baseline,
    BaselineEntry,
    BaselineError,
    check_run,
    load_baseline,
    never_ran,
    unmatched_entries,
)
from cer.results.conformance import UNREADABLE, Conformance, CoverageCount, conformance_of
from cer.results.labels import short_label
from cer.suite.loader import SuiteError, load_suite
from cer.text.safetext import for_terminal

MARKER_PREFIX = "cer_"
"""Put before a case's marker name when pytest or another plugin already uses the
name (``skip``, ``xfail``, ``timeout``…), so that a tag never changes how pytest runs
a case."""
_NOT_RUN = "not run: the run stopped before this case (-x, --maxfail or --sw)"
_WORKEROUTPUT_KEY = "cer_runs"
_REPLACED_KEY = "cer_replaced"
_ENTRY_IMPL_KEYS = tuple(kind.config_key for kind in KINDS.values())
_INCOMPLETE = 3
"""The exit code of a session whose cases cer skipped: ``cer run``'s own for an
incomplete run."""
_BATCHED = ("worksteal", "loadgroup")
"""The xdist modes that hand a process the cases of a suite in several batches."""
_OVERRULED_HEAD = (
    "cer: pytest's reports are not cer's verdict: a conftest.py or another plugin "
    "changed them; cer's verdict stands and the session fails"
)
_OVERRULED = (0, _INCOMPLETE, 5)
"""The exit codes a session whose reports are not cer's verdict never keeps: pytest's
success, the incomplete run's, and no tests collected; it exits 1 instead."""


def _overruled(status: int) -> bool:
    """Whether ``status`` is one of :data:`_OVERRULED`, spelled out here: the checks
    read no global a ``conftest.py`` could set to ``()`` (the pins name one that was
    replaced, and the checks still hold)."""
    return status in (0, 3, 5)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cer", "cer: Commons Format eval suites (docs/pytest.md)")
    for kind in KINDS.values():
        group.addoption(
            f"--cer-{kind.option.removeprefix('--')}",
            metavar=kind.metavar,
            help="run the evals.toml files named on the command line (and [tool.cer] "
            f"pytest_suites) against {kind.summary}",
        )
    group.addoption(
        "--cer-path",
        action="append",
        default=[],
        metavar="DIR",
        help="add DIR to the implementation's import path (repeatable)",
    )
    group.addoption(
        "--cer-timeout",
        type=float,
        metavar="SECONDS",
        help=f"per-case time limit (default {DEFAULT_TIMEOUT:g})",
    )
    group.addoption(
        "--cer-isolation",
        choices=ISOLATION_MODES,
        help=f"{' or '.join(ISOLATION_MODES)}, as cer run (default {DEFAULT_ISOLATION})",
    )
    group.addoption(
        "--cer-sandbox",
        choices=SANDBOX_MODES,
        help="confine the implementation with Landlock: auto (default), require or off, "
        "as cer run --sandbox",
    )
    group.addoption(
        "--cer-network",
        choices=NETWORK_MODES,
        help="the implementation's network: auto (default; loopback only where its world "
        "is built), allow (the machine's) or deny, as cer run --network",
    )
    group.addoption(
        "--cer-history",
        action="store_true",
        help="record each suite's run in cer's history (.cer/history.sqlite beside the "
        "suite), as cer run does",
    )
    group.addoption(
        "--cer-history-path",
        metavar="PATH",
        help="record each suite's run in the history database at PATH",
    )
    group.addoption(
        "--cer-accept-skips",
        action="store_true",
        help="let a session whose cases cer skipped (a category it cannot run) exit 0; "
        "by default it exits 3, as cer run does",
    )
    group.addoption(
        "--cer-baseline",
        metavar="FILE",
        help="a known-failures file, as cer run --baseline: its cases are "
        "xfail(strict=True), so a listed case that passes fails the session "
        "(default: cer_baseline, else [tool.cer] baseline)",
    )
    parser.addini("cer_impl", "the implementation (MODULE:ATTR) for cer suites", default=None)
    parser.addini(
        "cer_baseline", "a known-failures file for cer suites (as --cer-baseline)", default=None
    )


# --- configuration ---------------------------------------------------------------------


@dataclass(frozen=True)
class SuiteEntry:
    """A suite pytest collects, and the implementation it names itself (if any)."""

    path: Path
    implementation: tuple[str, str] | None = None
    """``(kind key, value)`` from a ``pytest_suites`` table, e.g. ``("impl", "m:f")``."""


def configured_suites(project: ProjectConfig) -> tuple[SuiteEntry, ...]:
    """``[tool.cer] pytest_suites``: paths, or tables with ``suite`` and at most one of
    ``impl``, ``impl_cmd`` and ``impl_cmd_per_case``; UsageError when malformed."""
    value = project.values.get("pytest_suites")
    if value is None:
        return ()
    where = f"{project.path}: [tool.cer] pytest_suites"
    if not isinstance(value, list):
        raise UsageError(f'{where} must be a list, e.g. pytest_suites = ["spec/evals.toml"]')
    entries = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            entries.append(SuiteEntry((project.root / item).resolve()))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("suite"), str):
            raise UsageError(
                f"{where}[{index}] must be a path or a table with a suite path, "
                f'e.g. {{ suite = "spec/evals.toml", impl = "pkg.mod:func" }}'
            )
        unknown = sorted(set(item) - {"suite", *_ENTRY_IMPL_KEYS})
        if unknown:
            raise UsageError(
                f"{where}[{index}]: unknown keys {', '.join(unknown)} "
                f"(known: suite, {', '.join(_ENTRY_IMPL_KEYS)})"
            )
        named = [key for key in _ENTRY_IMPL_KEYS if key in item]
        if len(named) > 1 or any(not isinstance(item[key], str) for key in named):
            raise UsageError(
                f"{where}[{index}] may name one implementation as a string: "
                f"one of {', '.join(_ENTRY_IMPL_KEYS)}"
            )
        implementation = (named[0], str(item[named[0]])) if named else None
        entries.append(SuiteEntry((project.root / item["suite"]).resolve(), implementation))
    return tuple(entries)


def _command_line_implementation(config: pytest.Config) -> tuple[str, str] | None:
    for kind in KINDS.values():
        value = config.getoption(f"cer_{kind.option.removeprefix('--').replace('-', '_')}")
        if value:
            return kind.config_key, str(value)
    return None


def _ini_implementation(config: pytest.Config) -> tuple[str, str] | None:
    value = config.getini("cer_impl")
    return ("impl", str(value)) if value else None


def _has_format_marker(path: Path) -> bool:
    """Whether the file declares ``commonsformat_evals`` at its top level (a cheap look
    at the text: the suite loader checks the real thing)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"(?m)^\s*commonsformat_evals\s*=", text) is not None


def _paths_given(config: pytest.Config) -> bool:
    """Whether the command line named what to collect (then configured suites are not
    added to it); True when this pytest cannot tell."""
    sources = getattr(pytest.Config, "ArgsSource", None)
    source = getattr(config, "args_source", None)
    return sources is None or source is None or source == sources.ARGS


def _argument_path(argument: str, invocation_dir: Path) -> Path:
    """The file a command-line argument names, without its ``::node`` part."""
    return (invocation_dir / argument.split("::", 1)[0]).resolve()


# --- markers -----------------------------------------------------------------------------


def marker_word(text: str) -> str:
    """A marker name for a category, class or tag: every character that cannot appear
    in a ``-m`` expression word becomes ``_`` (``area:literals`` → ``area_literals``)."""
    word = re.sub(r"[^0-9A-Za-z_]", "_", text)
    if not word or word[0].isdigit() or word.startswith("_"):
        word = MARKER_PREFIX + word.lstrip("_")
    return word


def _marker_names(lines: Sequence[str] | str | None) -> set[str]:
    if lines is None:
        return set()
    items = lines.splitlines() if isinstance(lines, str) else [str(line) for line in lines]
    return {line.split(":", 1)[0].split("(", 1)[0].strip() for line in items if line.strip()}


# --- running -----------------------------------------------------------------------------


# --- failure text ------------------------------------------------------------------------


# --- collection --------------------------------------------------------------------------


class CerPlugin:
    """The plugin's state for one pytest session (one per process with xdist)."""

    # No instance dict: a conftest.py cannot shadow one of the methods that check the
    # reports on the plugin object (``plugin.enforce = ...``); the class's own are
    # pinned (:data:`_PINNED`).
    __slots__ = (
        "__weakref__",
        "_case_names",
        "_foreign_markers",
        "_listed_cache",
        "_our_markers",
        "_positions",
        "active",
        "adopted",
        "baseline",
        "case_items",
        "collected",
        "config",
        "deselected",
        "entries",
        "explicit",
        "flagged",
        "found",
        "given",
        "handed_out",
        "logged",
        "lowered",
        "project",
        "replaced",
        "replaced_in_workers",
        "session",
        "states",
        "warm",
        "worker_runs",
    )

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.given = _command_line_implementation(config)
        try:
            self.project = find_project_config(config.rootpath)
        except UsageError as exc:
            if self.given or _ini_implementation(config):
                raise
            # Without a cer option this run may have nothing to do with cer: a
            # [tool.cer] it cannot read must not stop the project's own tests.
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(f"cer: {exc}; [tool.cer] is ignored"), stacklevel=2
            )
            self.project = ProjectConfig()
        self.entries = {entry.path: entry for entry in configured_suites(self.project)}
        self.active = bool(self.given or _ini_implementation(config) or self.entries)
        self.states: dict[Path, SuiteState] = {}
        self.worker_runs: list[dict[str, Any]] = []
        self._foreign_markers: set[str] | None = None
        self._our_markers: set[str] = set()
        self._positions: dict[int, int] = {}
        self.adopted: frozenset[int] | None = None
        """The children this process had when it began adopting orphans for cer's runs
        (None: it does not adopt them; see :meth:`adopt`)."""
        batches = hasattr(config, "workerinput") and config.getvalue("dist") in _BATCHED
        self.warm = WarmWorkers(1) if batches else None
        """Under xdist's ``worksteal`` and ``loadgroup`` a process runs its cases in
        several batches (it is handed items a few at a time, or steals them); a worker
        started ahead saves each later batch an interpreter start. Under the other
        modes a process makes one cer run per suite (its share, its file, its scope),
        and a worker started after it would only be killed unused."""
        if self.entries and not _paths_given(config):
            present = {_argument_path(arg, config.invocation_params.dir) for arg in config.args}
            for path in self.entries:
                if path not in present:
                    config.args.append(str(path))
        self.explicit = {
            _argument_path(arg, config.invocation_params.dir)
            for arg in config.args
            if arg.split("::", 1)[0].endswith(".toml")
        }
        self.baseline = self.read_baseline()
        self.case_items: dict[str, tuple[Path, str]] = {}
        """Each collected cer item's node id: its suite's path and its case."""
        self.logged: dict[str, Logged] = {}
        self.flagged: set[str] = set()
        """The items whose teardown report already says their reports are not cer's."""
        self.found: list[Mismatch] = []
        self.collected: set[str] = set()
        """The cer items this session collected to run (matching its arguments),
        before any ``pytest_collection_modifyitems``."""
        self.deselected: set[str] = set()
        """The cer items pytest was told were deselected (``-k``, ``-m``, ``--lf``...)."""
        self.handed_out: set[str] = set()
        """Under xdist, on the controller: the cer items the workers collected to run."""
        self.lowered: int | None = None
        """The exit code pytest was about to keep although cer's verdict fails."""
        self.replaced: tuple[str, ...] = ()
        self.replaced_in_workers: tuple[str, ...] = ()
        self.session: pytest.Session | None = None
        self._listed_cache: dict[Path, tuple[Suite, RunOptions] | None] = {}
        self._case_names: dict[str, frozenset[str]] = {}
        # The last word on the exit code, even if this plugin's hooks are unregistered.
        config.add_cleanup(self.enforce)

    # the baseline

    def baseline_path(self) -> Path | None:
        """``--cer-baseline`` (from the directory pytest was started in), else the
        ``cer_baseline`` ini option (from the ini file's directory), else ``baseline``
        in ``[tool.cer]`` (from ``pyproject.toml``'s)."""
        given = self.config.getoption("cer_baseline", None)
        if given:
            return self.config.invocation_params.dir / str(given)
        ini = self.config.getini("cer_baseline")
        if ini:
            base = self.config.inipath.parent if self.config.inipath else self.config.rootpath
            return base / str(ini)
        return self.project.path_value("baseline")

    def read_baseline(self) -> Baseline | None:
        """The known-failures file, read and held against the suites this session
        collects, as ``cer run --baseline`` holds it against its suite: a malformed
        file, or an entry naming no case of any of them, is a usage error before
        anything runs (checked once, by the process that starts the session)."""
        path = self.baseline_path()
        if path is None:
            return None
        try:
            baseline = load_baseline(path)
        except BaselineError as exc:
            raise UsageError(f"baseline: {exc}") from None
        if not hasattr(self.config, "workerinput"):
            suites = self.baseline_suites()
            problems = unmatched_in_all(baseline, suites)
            if problems:
                raise UsageError(
                    "\n".join(
                        f"baseline: {problem}; remove the entry or correct its case"
                        for problem in problems
                    )
                )
        return baseline

    def baseline_suites(self) -> list[Suite]:
        """The suites this session collects (those named on the command line and
        in ``pytest_suites``) that load; one that does not is reported when it is
        collected."""
        suites = []
        for path in sorted(self.explicit | set(self.entries)):
            if not path.is_file():
                continue
            if not (self.active or path in self.entries or _has_format_marker(path)):
                continue
            try:
                suites.append(load_suite(path))
            except SuiteError:
                continue
        return suites

    def known_failure(self, case: Case, state: SuiteState) -> pytest.MarkDecorator | None:
        """``xfail(strict=True)`` for a case the baseline lists. pytest then agrees
        with ``cer run --baseline``: a listed case failing as listed is xfailed; one
        that passes is an XPASS(strict) failure (a stale entry); one failing with the
        other status fails, since the xfail expects only its status's exception
        (:class:`CaseFailed` in the call, :class:`CaseErrored` in the setup)."""
        entry = self.listed(case.name, state.suite, state.options)
        if entry is None or self.baseline is None:
            return None
        raises = CaseFailed if entry.status == "fail" else CaseErrored
        where = self.shown(str(self.baseline.path)) + (f":{entry.line}" if entry.line else "")
        link = f" ({entry.link})" if entry.link else ""
        return pytest.mark.xfail(
            strict=True,
            raises=raises,
            reason=for_terminal(
                f"known {entry.status} ({where}): {entry.reason}{link}", multiline=False
            ),
        )

    def listed(self, name: str, suite: Suite, options: RunOptions) -> BaselineEntry | None:
        """The baseline's entry for case ``name`` of ``suite`` run with ``options``."""
        if self.baseline is None:
            return None
        names = self._case_names.get(str(suite.path))
        if names is None:
            names = self._case_names[str(suite.path)] = frozenset(c.name for c in suite.cases)
        aliases = (options.impl, short_label(options.kind, options.impl))
        return self.baseline.entry_for(name, names, aliases)

    # collection

    @pytest.hookimpl
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> SuiteFile | None:
        if file_path.suffix != ".toml":
            return None
        resolved = file_path.resolve()
        if resolved not in self.explicit and resolved not in self.entries:
            return None
        if not (self.active or resolved in self.entries or _has_format_marker(resolved)):
            return None
        return SuiteFile.from_parent(parent, path=file_path)

    def options_for(self, path: Path) -> RunOptions:
        """The run options of a suite: the command line first, then its
        ``pytest_suites`` entry, then the ``cer_impl`` ini option, then ``[tool.cer]``."""
        entry = self.entries.get(path.resolve())
        implementation = (
            self.given
            or (entry.implementation if entry is not None else None)
            or _ini_implementation(self.config)
        )
        values: dict[str, Any] = {key: None for key in _ENTRY_IMPL_KEYS}
        if implementation is not None:
            values[implementation[0]] = implementation[1]
        namespace = argparse.Namespace(
            suite=path,
            paths=list(self.config.getoption("cer_path") or []),
            timeout=self.config.getoption("cer_timeout"),
            isolation=self.config.getoption("cer_isolation"),
            sandbox=self.config.getoption("cer_sandbox"),
            network=self.config.getoption("cer_network"),
            max_memory=None,
            capture_limit=None,
            case_globs=[],
            categories=[],
            classes=[],
            tags=[],
            substrings=[],
            jobs=1 if hasattr(self.config, "workerinput") else None,
            **values,
        )
        try:
            resolved = resolve_run(namespace, self.project)
        except UsageError as exc:
            message = str(exc).replace("pass --impl MODULE:ATTR (or --impl-cmd COMMAND)", "")
            if "no implementation given" in message:
                message = (
                    "no implementation given: pass --cer-impl MODULE:ATTR, or set cer_impl "
                    "in pytest's configuration or impl in [tool.cer]"
                )
            raise UsageError(message) from None
        if resolved.several:
            raise UsageError(
                "[tool.cer] impls names several implementations; pytest runs one: "
                "pass --cer-impl, or name one in pytest_suites"
            )
        baseline = self.baseline  # what the verdict is held against: the conditions say it
        return replace(
            resolved.options,
            protected=self.protected_outputs(),
            baseline="" if baseline is None else str(baseline.path),
            baseline_sha256="" if baseline is None else baseline.sha256,
        )

    def protected_outputs(self) -> tuple[str, ...]:
        """What this session writes that the implementation must not reach: the
        history database given by path and the JUnit XML file (the sandbox keeps it
        away from them, as from ``cer run``'s outputs)."""
        paths = []
        for option in ("cer_history_path", "xmlpath"):
            value = self.config.getoption(option, None)
            if value:
                paths.append(str((self.config.invocation_params.dir / str(value)).resolve()))
        return tuple(paths)

    def marker_for(self, text: str) -> str:
        """The registered marker name of a category, class or tag."""
        if self._foreign_markers is None:
            registered = _marker_names(self.config.getini("markers"))
            try:
                # The markers the project declares itself, as opposed to those of
                # pytest and its plugins. pytest 9 deprecates inicfg and 10 drops it;
                # without it every registered name counts as foreign (the safe side).
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    declared = _marker_names(self.config.inicfg.get("markers"))
            except Exception:
                declared = set()
            self._foreign_markers = registered - declared
        word = marker_word(text)
        if word in self._foreign_markers:
            word = MARKER_PREFIX + word
        if word not in self._our_markers:
            self._our_markers.add(word)
            self.config.addinivalue_line("markers", f"{word}: cer case marker ({text})")
        return word

    # running

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Under ``-n`` with the default load scheduling: hand each xdist worker one
        share of each suite, whole, so that it makes one cer run over it instead of a
        run per few items (see :func:`share_scheduler`)."""
        if not self.active or config.getvalue("dist") != "load":
            return None
        return share_scheduler(config, log)

    def _xdist_queue(self) -> list[pytest.Item] | None:
        """The items this xdist worker was handed and has not run yet, in order."""
        if not hasattr(self.config, "workerinput"):
            return None
        for plugin in self.config.pluginmanager.get_plugins():
            queue = getattr(plugin, "torun", None)
            session = getattr(plugin, "session", None)
            if queue is None or session is None or not hasattr(queue, "lock"):
                continue
            try:
                with queue.lock() as pending:
                    indices = [i for i in pending if isinstance(i, int)]
                items: list[pytest.Item] = session.items
                upcoming = getattr(plugin, "nextitem_index", None)
                head = [upcoming] if isinstance(upcoming, int) else []
                return [items[i] for i in head + indices]
            except Exception:
                return None
        return None

    def batch_for(self, item: CaseItem) -> list[str]:
        """The cases to run now: this item's, and those of the items of the same suite
        this process runs after it and has not run yet."""
        state = item.state
        upcoming = self._xdist_queue()
        if upcoming is None:
            items = item.session.items
            if not self._positions:
                self._positions = {id(each): index for index, each in enumerate(items)}
            start = self._positions.get(id(item), 0)
            upcoming = items[start + 1 :]
        names = [item.name]
        for other in upcoming:
            if (
                isinstance(other, CaseItem)
                and other.parent is item.parent
                and other.name not in state.attempted
                and other.name not in names
            ):
                names.append(other.name)
        return names

    def stop_after(self, session: pytest.Session) -> int:
        """How many more failures pytest takes before it stops (0: it never stops)."""
        maxfail = int(self.config.getoption("maxfail") or 0)
        if self.config.getoption("stepwise", False):
            maxfail = 1 if maxfail == 0 else min(maxfail, 1)
        if maxfail <= 0:
            return 0
        return max(1, maxfail - session.testsfailed)

    # cer's verdict against pytest's reports

    def case_of(self, nodeid: str) -> tuple[Path, str] | None:
        """The suite and case of a cer item's node id: from this process's collection,
        else (an xdist controller, which collects nothing) read from the id, for a
        suite this session names."""
        known = self.case_items.get(nodeid)
        if known is not None:
            return known
        path, sep, name = nodeid.partition("::")
        if not sep or not name or not path.endswith(".toml"):
            return None
        suites = self.explicit | set(self.entries)
        for base in (self.config.rootpath, self.config.invocation_params.dir):
            candidate = (base / path).resolve()
            if candidate in suites:
                return candidate, name
        return None

    def listed_status(self, path: Path, name: str) -> str | None:
        """The status the baseline lists for a case, when pytest applies its xfail."""
        if (
            self.baseline is None
            or self.config.getoption("runxfail", False)
            or not self.config.pluginmanager.has_plugin("skipping")
        ):
            return None
        state = self.states.get(path)
        if state is not None:
            found: tuple[Suite, RunOptions] | None = (state.suite, state.options)
        else:
            if path not in self._listed_cache:
                try:
                    self._listed_cache[path] = (load_suite(path), self.options_for(path))
                except (SuiteError, UsageError):
                    self._listed_cache[path] = None
            found = self._listed_cache[path]
        if found is None:
            return None
        entry = self.listed(name, *found)
        return entry.status if entry is not None else None

    def expected(self, key: tuple[Path, str], ran: dict[tuple[Path, str], CaseResult]) -> Outcome:
        """The outcome cer's verdict gives an item: from this process's run of its
        suite, else from the runs of the xdist workers (``ran``)."""
        path, name = key
        state = self.states.get(path)
        if state is not None:
            result, failure = state.results.get(name), state.failures.get(name)
        else:
            result, failure = ran.get(key), None
        return expected_outcome(result, failure, self.listed_status(path, name))

    def worker_results(self) -> dict[tuple[Path, str], CaseResult]:
        """Under xdist, on the controller: each case's result from the workers' runs."""
        ran: dict[tuple[Path, str], CaseResult] = {}
        if not self.states:
            for run in self.session_runs():
                where = Path(run.suite_path).resolve()
                for result in run.results:
                    if not (result.status is Status.SKIPPED and result.reason == "deselected"):
                        ran[(where, result.case_name)] = result
        return ran

    def must_report(self) -> set[str]:
        """The cer items that must have reports: every one collected and not
        deselected (under xdist, every one the workers collected to run)."""
        if hasattr(self.config, "workerinput"):
            return set()
        return (self.collected - self.deselected) | self.handed_out

    def unreported(self) -> list[str]:
        """The cer items that must have reports and have none: a conftest that removed
        them from the session's items, or replaced the protocol that runs them. Only
        while the session is to exit as if it succeeded (a session that stopped early,
        ``-x``, ``--maxfail`` or an interrupt, exits 1 or 2 by itself), and never with
        ``--collect-only``."""
        session = self.session
        if session is None or self.config.getoption("collectonly", False):
            return []
        if not _overruled(session.exitstatus):
            return []
        return sorted(self.must_report() - set(self.logged))

    def verdict_fails(self, ran: dict[tuple[Path, str], CaseResult]) -> bool:
        """Whether cer's verdict fails an item of the session (one that reported, or
        whose case cer ran): then the session cannot exit as if it succeeded, whatever
        pytest's own count of failures says."""
        for nodeid in set(self.logged) | self.must_report():
            key = self.case_of(nodeid)
            if key is None:
                continue
            if nodeid not in self.logged:
                state = self.states.get(key[0])
                known = (
                    key in ran
                    if state is None
                    else key[1] in state.results or key[1] in state.failures
                )
                if not known:
                    continue
            if self.expected(key, ran) in ("failed", "error"):
                return True
        return False

    def check_reports(self, *, terminal: bool = True) -> list[Mismatch]:
        """Every cer item whose reports (as logged, as they are now, as the terminal
        counted them) are not cer's verdict, or that has none."""
        ran = self.worker_results()
        reporter = self.config.pluginmanager.get_plugin("terminalreporter") if terminal else None
        stats = getattr(reporter, "stats", None)
        counted = terminal_phases(stats, set(self.logged)) if isinstance(stats, dict) else None
        found = []
        for nodeid, logged in self.logged.items():
            key = self.case_of(nodeid)
            if key is None:
                continue
            shown = None if counted is None else counted.get(nodeid, {})
            found.extend(mismatches_of(nodeid, self.expected(key, ran), logged, shown))
        for nodeid in self.unreported():
            key = self.case_of(nodeid)
            if key is not None:
                found.append(Mismatch(nodeid, self.expected(key, ran), "nothing", "no report"))
        return found

    @pytest.hookimpl(tryfirst=True)
    def pytest_itemcollected(self, item: pytest.Item) -> None:
        """Note each cer item the session collected to run."""
        if item.nodeid in self.case_items:
            self.collected.add(item.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_deselected(self, items: Sequence[pytest.Item]) -> None:
        """Note the cer items deselected: they need no report."""
        for item in items:
            if item.nodeid in self.case_items:
                self.deselected.add(item.nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """Under xdist, on the controller: the cer items a worker collected to run."""
        for nodeid in ids:
            if isinstance(nodeid, str) and self.case_of(nodeid) is not None:
                self.handed_out.add(nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note what each phase of a cer item reports as it is logged; at its teardown,
        where this process ran its case, fail the teardown when the item's reports are
        not cer's verdict (so the terminal and JUnit XML show it on the item)."""
        key = self.case_of(report.nodeid)
        if key is None:
            return
        if report.when in outcomes.PHASES:
            logged = self.logged.setdefault(report.nodeid, Logged())
            logged.phases[report.when] = outcomes.phase_outcome(report)
            logged.reports[report.when] = report
            return
        if report.when != "teardown" or key[0] not in self.states:
            return
        if report.nodeid in self.flagged or report.nodeid not in self.logged:
            return
        found = mismatches_of(report.nodeid, self.expected(key, {}), self.logged[report.nodeid])
        if found:
            self.flagged.add(report.nodeid)
            report.outcome = "failed"
            report.longrepr = for_terminal(f"{_OVERRULED_HEAD}\n{mismatch_text(found)}")

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_check(self, session: pytest.Session) -> None:
        """Hold the session's reports against cer's verdict once every item ran (in
        the process that reports: without xdist, or its controller)."""
        self.session = session
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            # A worker's own conftest.py may patch what the controller cannot see.
            workeroutput[_REPLACED_KEY] = json.dumps(_PINNED.replaced())
            return
        if not (self.logged or self.must_report()):
            return
        self.found = self.check_reports()
        self.replaced = _PINNED.replaced() + self.replaced_in_workers
        self.enforce()

    @pytest.hookimpl(optionalhook=True, specname="pytest_testnodedown")
    def pytest_testnodedown_replaced(self, node: Any, error: Any) -> None:
        """What an xdist worker found replaced of cer's functions."""
        output = getattr(node, "workeroutput", None) or {}
        try:
            names = json.loads(output.get(_REPLACED_KEY) or "[]")
        except ValueError:
            names = ["the record of what the worker found replaced"]
        worker = str(getattr(getattr(node, "gateway", None), "id", None) or "a worker")
        found = tuple(f"{name} in xdist worker {worker}" for name in map(str, names))
        self.replaced_in_workers += found

    @pytest.hookimpl(wrapper=True, tryfirst=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_enforce(
        self, session: pytest.Session
    ) -> Generator[None, object, object]:
        """Around every other ``pytest_sessionfinish``: one that lowers the exit code
        after :meth:`pytest_sessionfinish_check` does not keep it."""
        self.session = session
        try:
            return (yield)
        finally:
            self.enforce()

    def enforce(self) -> None:
        """A session whose reports are not cer's verdict, or whose plugin code was
        replaced, exits 1 (never 0, 3 or 5). Checked again at each late point
        (after the session's finish, at unconfigure, at the config's cleanup), as a
        hook of another plugin may change the exit code after this one did."""
        session = self.session
        if session is None or hasattr(self.config, "workerinput"):
            return
        if not (self.logged or self.must_report()) or not _overruled(session.exitstatus):
            return
        if not (self.found or self.replaced):
            self.found = self.check_reports(terminal=False)
            self.replaced = _PINNED.replaced() + self.replaced_in_workers
        if self.found or self.replaced:
            session.exitstatus = 1
        elif self.verdict_fails(self.worker_results()):
            # The reports are cer's, but the count pytest exits by is not (a hook set
            # session.testsfailed, or patched what counts as failed).
            self.lowered = int(session.exitstatus)
            session.exitstatus = 1
        else:
            self.mark_incomplete(session)

    @pytest.hookimpl(tryfirst=True, specname="pytest_terminal_summary")
    def pytest_terminal_summary_overruled(self, terminalreporter: Any) -> None:
        """Name the items whose reports are not cer's verdict, and replaced code."""
        if not (self.found or self.replaced or self.lowered is not None):
            return
        terminalreporter.section("cer: reports overruled", red=True)
        terminalreporter.write_line(_OVERRULED_HEAD)
        if self.lowered is not None:
            terminalreporter.write_line(
                f"  cer's verdict fails cases, yet pytest was to exit {self.lowered}: "
                "its count of failures is not cer's"
            )
        for each in self.found:
            terminalreporter.write_line(for_terminal(f"  {each.text()}", multiline=False))
        for name in self.replaced:
            terminalreporter.write_line(f"  cer's {name} was replaced at run time")
        terminalreporter.write_line(
            "cer: the session fails (exit 1). Against code you do not trust, run the "
            "suite with `cer run` (docs/pytest.md)."
        )

    # reporting

    def process_runs(self) -> list[RunResult]:
        runs = []
        for state in self.states.values():
            run = state.combined()
            if run is not None:
                runs.append(run)
        return runs

    @pytest.hookimpl
    def pytest_unconfigure(self) -> None:
        if self.warm is not None:
            self.warm.close()
        self.enforce()

    def adopt(self) -> None:
        """Adopt orphans before the first cer run, as ``cer run`` does (pytest is no
        subreaper): a daemon that a harness or the implementation's import starts in
        a session of its own is then this process's, so each run ends what it left
        and the session's end ends the rest."""
        if self.adopted is None and not process_tree.adopting() and process_tree.adopt_orphans():
            self.adopted = process_tree.children()

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.warm is not None:
            self.warm.close()
        if self.adopted is not None:
            process_tree.end_strays(self.adopted)
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_WORKEROUTPUT_KEY] = json.dumps(
                [serialize.run_to_dict(run) for run in self.process_runs()]
            )
            return
        self.mark_incomplete(session)

    def mark_incomplete(self, session: pytest.Session) -> None:
        """A session whose cases cer could not run proves nothing complete: like
        ``cer run`` it exits 3 (unless told to accept skips), never 0."""
        if session.exitstatus == 0 and self.skipped_count() and not self.accept_skips():
            session.exitstatus = _INCOMPLETE

    def accept_skips(self) -> bool:
        return bool(self.config.getoption("cer_accept_skips", False))

    def skipped_count(self) -> int:
        """The cases of this session that cer skipped itself (a category it cannot
        run), as opposed to those pytest did not select."""
        return sum(
            1
            for run in self.session_runs()
            for result in run.results
            if result.status is Status.SKIPPED and result.reason not in NOT_SELECTED
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        text = output.get(_WORKEROUTPUT_KEY)
        if text:
            self.worker_runs.extend(json.loads(text))

    def session_runs(self) -> list[RunResult]:
        """One run per suite for the whole session: this process's, or the workers'."""
        runs = self.process_runs() + [serialize.run_from_dict(d) for d in self.worker_runs]
        by_suite: dict[str, list[RunResult]] = {}
        for run in runs:
            by_suite.setdefault(run.suite_path, []).append(run)
        return [merge_process_runs(group) for group in by_suite.values()]

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        runs = self.session_runs()
        if not runs:
            return
        terminalreporter.section("cer")
        history_path = self.config.getoption("cer_history_path")
        history_wanted = bool(history_path or self.config.getoption("cer_history"))
        for run in runs:
            # The implementation's words (its id, a load failure's message in a note)
            # are shown as data: control and bidi characters as escapes.
            heading = f"{self.shown(run.suite_path)} · {run.implementation_id}"
            terminalreporter.write_line(for_terminal(heading, multiline=False))
            conformance = None
            suite = self.suite_of(run)
            if suite is not None:
                check = None if self.baseline is None else check_run(self.baseline, suite, run)
                # pytest exits 0 for a -k selection that passed: the word says so too
                coverage = _coverage_of(suite, run)
                conformance = conformance_of(run, coverage, check, selection_passes=True)
            line = text_report.summary_line(run, conformance=conformance)
            terminalreporter.write_line(f"  {for_terminal(line)}")
            for note in run.notes:
                terminalreporter.write_line(for_terminal(f"  note: {note}"))
            if history_wanted:
                recorded = self.record(run, history_path, conformance)
                terminalreporter.write_line(for_terminal(f"  {recorded}"))
        skipped = self.skipped_count()
        if skipped:
            cases = f"{skipped} case{'s' if skipped != 1 else ''}"
            if self.accept_skips():
                terminalreporter.write_line(
                    f"cer: incomplete: {cases} skipped by cer, accepted (--cer-accept-skips)"
                )
            else:
                terminalreporter.write_line(
                    f"cer: incomplete: {cases} skipped by cer, so the session exits "
                    f"{_INCOMPLETE} as cer run does (--cer-accept-skips accepts skips)"
                )

    def suite_of(self, run: RunResult) -> Suite | None:
        """The suite ``run`` ran: this process's, else read again (under xdist the
        workers ran it)."""
        for state in self.states.values():
            if str(state.suite.path) == run.suite_path:
                return state.suite
        try:
            return load_suite(run.suite_path)
        except SuiteError:
            return None

    def history_max_bytes(self) -> int | None:
        """``[tool.cer] history_max_mb`` of this session's project, in bytes."""
        try:
            return history_max_bytes(self.project)
        except UsageError:
            return None

    def shown(self, path: str) -> str:
        """``path`` relative to the root directory when it is below it."""
        try:
            return str(Path(path).relative_to(self.config.rootpath))
        except ValueError:
            return path

    def record(
        self, run: RunResult, database: str | None, verdict: Conformance | None = None
    ) -> str:
        """Record ``run`` in cer's history, as ``cer run`` does, with the verdict the
        session stated; a line saying where."""
        path = Path(database) if database else default_history_path(run.suite_path)
        try:
            suite = load_suite(run.suite_path)
        except SuiteError:
            suite = None
        try:
            with History.open(path, max_bytes=self.history_max_bytes()) as history:
                history.record(run, suite, verdict=verdict)
        except HistoryError as exc:
            return f"cer: warning: history: {exc}; this run is not recorded"
        return f"recorded in {path}"


def _coverage_of(suite: Suite, run: RunResult) -> Coverage | CoverageCount | None:
    """The run's constraint coverage for its verdict (None without a commonsformat.md;
    a document that cannot be read covers nothing)."""
    try:
        return suite_coverage(suite, run)
    except CoverageError:
        return UNREADABLE


def unmatched_in_all(baseline: Baseline, suites: Sequence[Suite]) -> tuple[str, ...]:
    """The baseline's entries that name no case of any of ``suites``, one message
    each (:func:`cer.results.baseline.unmatched_entries`'s, for one suite)."""
    if not suites:
        return ()
    if len(suites) == 1:
        return unmatched_entries(baseline, suites[0])
    name_sets = [frozenset(case.name for case in suite.cases) for suite in suites]
    where = ", ".join(str(suite.path) for suite in suites)
    return tuple(
        f"{baseline.where(entry)}: case {entry.case!r} names no case of {where}"
        for entry in baseline.entries
        if not any(entry.matches(name, names) for names in name_sets for name in names)
    )


def _plugin(config: pytest.Config) -> CerPlugin:
    plugin = config.pluginmanager.get_plugin("cer-session")
    assert isinstance(plugin, CerPlugin)
    return plugin


_SESSION_PLUGIN = pytest.StashKey[list["CerPlugin"]]()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Before any ``conftest.py`` is imported: the configuration's cleanups run last
    registered first, so one registered now runs after every cleanup a
    ``conftest.py`` can register, and there has the last word on the exit code
    (:meth:`CerPlugin.enforce`)."""
    plugins: list[CerPlugin] = []
    early_config.stash[_SESSION_PLUGIN] = plugins

    def enforce_last() -> None:
        for plugin in plugins:
            plugin.enforce()

    early_config.add_cleanup(enforce_last)


def pytest_configure(config: pytest.Config) -> None:
    try:
        plugin = CerPlugin(config)
    except UsageError as exc:
        raise pytest.UsageError(f"cer: {exc}") from None
    config.pluginmanager.register(plugin, "cer-session")
    config.stash.get(_SESSION_PLUGIN, []).append(plugin)


class SuiteFile(pytest.File):
    """An eval suite: one item per case, in declared order."""

    def collect(self) -> Iterator[CaseItem]:
        plugin = _plugin(self.config)
        try:
            suite = load_suite(self.path)
            options = plugin.options_for(self.path)
        except SuiteError as exc:
            raise self.CollectError(str(exc)) from None
        except UsageError as exc:
            raise self.CollectError(f"{self.path}: {exc}") from None
        for warning in suite.warnings:
            self.warn(pytest.PytestWarning(f"{self.path.name}: {warning}"))
        state = SuiteState(suite, options, chosen_by=_pytest_selection(self.config))
        plugin.states[self.path.resolve()] = state
        for case in suite.cases:
            item = CaseItem.from_parent(self, name=case.name, case=case, state=state)
            plugin.case_items[item.nodeid] = (self.path.resolve(), case.name)
            for text in dict.fromkeys((case.category, case.case_class, *case.tags)):
                item.add_marker(plugin.marker_for(text))
            known = plugin.known_failure(case, state)
            if known is not None:
                item.add_marker(known)
            yield item


def share_of(nodeid: str, shares: int) -> str:
    """The scheduling scope of an item: a case of a suite (``path.toml::name``) falls
    in one of ``shares`` shares of its suite, by a stable hash of its name; any other
    test is a scope of its own, handed out as load scheduling would."""
    path, sep, rest = nodeid.partition("::")
    if not sep or not path.endswith(".toml") or "::" in rest or shares < 1:
        return nodeid
    return f"{path}::cer-share-{zlib.crc32(rest.encode('utf-8', 'surrogatepass')) % shares}"


def share_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scope scheduling with :func:`share_of` as the scope: each scope
    goes to one worker at once, so that the worker's queue holds its whole share when
    its first case runs (and the plugin runs them all in one cer run)."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    shares = config.getoption("numprocesses") or 1
    shares = shares if isinstance(shares, int) else 1

    class ShareScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return share_of(nodeid, shares)

    return ShareScheduling(config, log)


def _skip_here(reason: str) -> None:
    """Skip the running item, reported at the case's own location when this pytest
    can do that (it otherwise names the line of this module)."""
    try:
        error = pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:
        error = pytest.skip.Exception(reason)
    raise error


class CaseItem(pytest.Item):
    """One case of a suite. Its result comes from the suite's cer run."""

    def __init__(self, *, case: Case, state: SuiteState, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.state = state

    def setup(self) -> None:
        state = self.state
        if self.name not in state.attempted:
            plugin = _plugin(self.config)
            plugin.adopt()
            state.run(plugin.batch_for(self), plugin.stop_after(self.session), plugin.warm)
        failure = state.failures.get(self.name)
        if failure is not None:
            pytest.fail(for_terminal(f"cer: {failure}"), pytrace=False)
        result = state.results.get(self.name)
        if result is None:
            pytest.fail(f"cer: {_NOT_RUN}", pytrace=False)
        if result.stdout:
            self.add_report_section("call", "stdout", for_terminal(result.stdout))
        if result.stderr:
            self.add_report_section("call", "stderr", for_terminal(result.stderr))
        if never_ran(result):  # not the error an errored entry lists: never xfailed
            pytest.fail(failure_text(state.suite, self.case, result), pytrace=False)
        if result.status is Status.ERRORED:
            raise CaseErrored(failure_text(state.suite, self.case, result))
        if result.status is Status.SKIPPED:
            _skip_here(for_terminal(result.reason or "skipped"))

    def runtest(self) -> None:
        result = self.state.results.get(self.name)
        if result is None or result.status is not Status.PASS:
            raise CaseFailed(
                failure_text(self.state.suite, self.case, result)
                if result is not None
                else f"cer: {_NOT_RUN}"
            )

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, CaseFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.case.line - 1 if self.case.line else None
        return self.path, line, f"{self.case.label} ({self.case.category})"


def _pytest_selection(config: pytest.Config) -> str:
    """How pytest chooses the cases it runs, in its own options (``pytest -k 'parse'``),
    for the conditions of a run that did not run them all."""
    words = ["pytest"]
    for option, name in (("-k", "keyword"), ("-m", "markexpr")):
        value = config.getoption(name, None)
        if value:
            words.append(f"{option} {value!r}")
    return " ".join(words)


_PINNED = Pinned.of(
    (
        CerPlugin,
        SuiteFile,
        CaseItem,
        suite_module.SuiteState,
        outcomes.Logged,
        outcomes.Mismatch,
        outcomes.Pinned,
        # what decides the verdict the plugin holds the reports against
        sys.modules["cer.engine.runner"],
        sys.modules["cer.engine.execution"],
        sys.modules["cer.judge.compare"],
        sys.modules["cer.judge.equality"],
        sys.modules["cer.judge.verdict"],
    ),
    whole=(outcomes, suite_module, sys.modules[__name__]),
)
"""The plugin's functions, and those of the runner and the judge, as imported before
any conftest.py: see :class:`Pinned`."""

"""The runner verified by the runner: an adapter that runs an inline suite for real.

The project's own ``evals.toml`` holds cases whose ``input`` is a whole module: an
inline suite (TOML text), an inline implementation (Python source) and run options.
:func:`run_case` writes them to a fresh temporary folder, runs the real
:func:`cer.engine.runner.run_suite` on them, and reports what the run produced as an
observation that the outer suite's ``expect`` tables check::

    cer run evals.toml --impl cer.testing.selfcheck:run_case

Input keys of a self-check case:

``suite`` (required)
    The text of the inner ``evals.toml``.
``impl``
    Python source of the module ``subject`` (the implementation under test).
``entry``
    ``MODULE:ATTR`` to run, or just ``ATTR`` of ``subject``; default ``subject:f``.
``modules``
    More modules: a table of module name to Python source.
``fixtures``
    Files of the inner ``fixtures/`` folder: a table of file name to text.
``options``
    ``timeout`` (seconds, default 2), ``isolation``, ``max_memory`` and
    ``capture_limit`` (bytes, or a size such as ``"512M"``), ``categories`` (a table
    like ``[tool.cer.categories]``), ``sandbox`` (``auto``, ``require`` or ``off``), and
    the selections ``case``, ``category``,
    ``class``, ``tag`` and ``k`` (lists of strings).
``runs``
    Run the suite this many times (default 1) and report whether every run produced
    the same statuses, reasons and observations.
``suite_encoding``
    Encoding used to write the suite file (default ``utf-8``), to produce a suite
    that is not valid UTF-8.
``cli``
    Instead of one call of ``run_suite``, steps of the command line, run in order in
    the module's folder (which holds a ``pyproject.toml`` with an empty
    ``[tool.cer]``, so that nothing above it is read): each a table with ``args``
    (the words after ``cer``, such as ``["run", "evals.toml", "--impl",
    "subject:f", "--failed"]``) and optionally ``impl``, the source ``subject`` is
    rewritten with before the step. What is kept between steps is what the command
    keeps: the history in ``.cer/`` beside the suite. This is how a case checks what
    only the command line decides (``--failed``, exit codes).

The observation:

``statuses``, ``names``, ``classes``, ``categories``
    One entry per result, in the order the run returned them.
``summary``
    ``{ total, passed, failed, skipped, errored }``; ``verdict`` is the summary's
    verdict (``conformant``, ``incomplete``, ``nonconformant``).
``reason_NAME``, ``stdout_NAME``, ``stderr_NAME``, ``traceback_NAME``
    The inner case ``NAME``'s reason and captured streams (``None`` when absent).
``observed_NAME``, ``paths_NAME``, ``elapsed_NAME``
    Its observation without ``elapsed_ms``, the paths of its mismatches, and its
    elapsed time in whole milliseconds.
``notes``, ``warnings``
    The run's notes and the suite's warnings, one per line.
``network_calls``
    Network calls the runner itself made while running the suite (name lookups,
    connections and datagrams to internet addresses), seen through Python's audit
    hooks in the runner's own process; the implementation runs in other processes and
    is not counted. An empty list when there were none.
``format_version``, ``target_module``, ``events``, ``wall_ms``, ``suite_unchanged``,
``same_across_runs``
    The negotiated version, the target, the event kinds in order, the run's wall
    time, whether the loaded suite was left untouched by the run, and (with ``runs``)
    whether repeated runs agreed.

With ``cli``, the observation is ``cli_exits`` (each step's exit code),
``cli_statuses`` (each step's case statuses in order when its standard output is a
``--format json`` document, else an empty list), ``cli_stdout_N`` and
``cli_stderr_N`` (the streams of step N, from 1), and ``suite_unchanged``.

A suite the loader refuses is an observation too: ``{ suite_error = "...",
problems = [...], problem_count = N }``. Invalid run options raise, as the runner
does.

Whatever the case expects, :func:`run_case` also checks the runner's invariants and
raises :class:`InvariantBroken` (so the outer case errors) when a run breaks one: one
result per declared case, in declared order, with matching classes and categories; a
summary that adds up; no pass without an observation; the documented event order
(RunStarted first, the implementation's event before any case, RunFinished last).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from cer.engine.options import (
    DEFAULT_ISOLATION,
    DEFAULT_SANDBOX,
    Isolation,
    RunOptions,
    SandboxMode,
)
from cer.engine.runner import run_suite
from cer.events import CaseFinished, RunEvent, RunFinished, RunStarted
from cer.model import RunResult, Status, Suite
from cer.suite.loader import SuiteError, load_suite
from cer.suite.selection import Selection

__all__ = ["InvariantBroken", "run_case"]

SUBJECT = "subject"
"""Module name of the inline implementation."""
DEFAULT_TIMEOUT = 2.0

_SELECTIONS = ("case", "category", "class", "tag", "k")
_OPTION_KEYS = frozenset(
    {"timeout", "isolation", "max_memory", "capture_limit", "categories", "sandbox", *_SELECTIONS}
)
_INPUT_KEYS = frozenset(
    {"suite", "impl", "entry", "modules", "fixtures", "options", "runs", "suite_encoding", "cli"}
)
_STEP_KEYS = frozenset({"args", "impl"})
STEP_TIMEOUT = 120.0
"""The longest one command-line step may take before the case is errored."""


_NETWORK_EVENTS = frozenset(
    {
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.connect",
        "socket.sendto",
        "socket.sendmsg",
    }
)
_INTERNET = frozenset({socket.AF_INET, socket.AF_INET6})
_watching: list[list[str]] = []
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Note a network call while a run is watched (an audit hook: it cannot be removed,
    so it does nothing unless :func:`_watch_network` is active)."""
    if not _watching or event not in _NETWORK_EVENTS:
        return
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock = args[0] if args else None
        if getattr(sock, "family", None) not in _INTERNET:
            return  # a local pipe between the runner and its workers
    _watching[-1].append(f"{event} {args[1:]!r}"[:200])


def _watch_network() -> list[str]:
    """Start collecting the runner's own network calls into the returned list."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    calls: list[str] = []
    _watching.append(calls)
    return calls


class InvariantBroken(AssertionError):
    """A run broke a rule that holds whatever the suite and the implementation are."""


def run_case(case: Any) -> dict[str, Any]:
    """Run the inline module described by ``case`` (a case view or its input table)."""
    data = getattr(case, "input", case)
    if not isinstance(data, Mapping):
        raise TypeError("a self-check case's input must be a table")
    unknown = sorted(set(data) - _INPUT_KEYS)
    if unknown:
        raise ValueError(f"unknown self-check input keys: {', '.join(unknown)}")
    folder = Path(tempfile.mkdtemp(prefix="cer-selfcheck-"))
    try:
        return _run_in(folder, data)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run_in(folder: Path, data: Mapping[str, Any]) -> dict[str, Any]:
    suite_path = _write_module(folder, data)
    if "cli" in data:
        return _run_cli(folder, suite_path, data["cli"])
    try:
        suite = load_suite(suite_path)
    except SuiteError as exc:
        return {
            "suite_error": str(exc),
            "problems": list(exc.problems),
            "problem_count": len(exc.problems),
        }
    options = _options(data)
    runs = _positive_int(data.get("runs", 1), "runs")
    before = _fingerprint(suite)
    observation: dict[str, Any] = {}
    fingerprints = []
    calls = _watch_network()
    try:
        for _ in range(runs):
            events: list[RunEvent] = []
            started = time.monotonic()
            run = run_suite(suite, options, on_event=events.append)
            wall_ms = round((time.monotonic() - started) * 1000)
            _check_invariants(suite, run, events)
            fingerprints.append(_run_fingerprint(run))
            if not observation:
                observation = _observe(suite, run, events, wall_ms)
    finally:
        _watching.remove(calls)
    observation["suite_unchanged"] = _fingerprint(suite) == before
    observation["network_calls"] = calls
    if runs > 1:
        observation["same_across_runs"] = all(f == fingerprints[0] for f in fingerprints)
    return observation


def _run_cli(folder: Path, suite_path: Path, steps: Any) -> dict[str, Any]:
    """Run the steps of ``cli`` as the command line (``python -m cer.cli``, a process
    of its own each, in ``folder``) and report what each step printed and exited with."""
    if not isinstance(steps, list) or not steps:
        raise TypeError("cli must be a non-empty array of steps")
    (folder / "pyproject.toml").write_text("[tool.cer]\n", encoding="utf-8")
    before = suite_path.read_bytes()
    exits: list[int] = []
    statuses: list[list[str]] = []
    stdouts: list[str] = []
    stderrs: list[str] = []
    for step in steps:
        if not isinstance(step, Mapping):
            raise TypeError("each cli step must be a table")
        unknown = sorted(set(step) - _STEP_KEYS)
        if unknown:
            raise ValueError(f"unknown cli step keys: {', '.join(unknown)}")
        args = step.get("args")
        if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
            raise TypeError("a cli step's args must be an array of strings")
        if "impl" in step:
            (folder / f"{SUBJECT}.py").write_text(str(step["impl"]), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "cer.cli", *args],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=STEP_TIMEOUT,
            check=False,
        )
        stdout = done.stdout.decode("utf-8", "replace")
        exits.append(done.returncode)
        statuses.append(_json_statuses(stdout))
        stdouts.append(stdout)
        stderrs.append(done.stderr.decode("utf-8", "replace"))
    observation: dict[str, Any] = {"cli_exits": exits, "cli_statuses": statuses}
    for number, (stdout, stderr) in enumerate(zip(stdouts, stderrs, strict=True), start=1):
        observation[f"cli_stdout_{number}"] = stdout
        observation[f"cli_stderr_{number}"] = stderr
    observation["suite_unchanged"] = suite_path.read_bytes() == before
    return observation


def _json_statuses(stdout: str) -> list[str]:
    """The case statuses of a ``--format json`` document, in order; [] for any other
    output."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return []
    results = document.get("results") if isinstance(document, dict) else None
    if not isinstance(results, list):
        return []
    return [str(r.get("status")) for r in results if isinstance(r, dict)]


def _write_module(folder: Path, data: Mapping[str, Any]) -> Path:
    suite_text = data.get("suite")
    if not isinstance(suite_text, str):
        raise TypeError("suite must be the text of an evals.toml")
    encoding = data.get("suite_encoding", "utf-8")
    suite_path = folder / "evals.toml"
    suite_path.write_bytes(suite_text.encode(str(encoding)))
    impl = data.get("impl")
    if impl is not None:
        (folder / f"{SUBJECT}.py").write_text(str(impl), encoding="utf-8")
    for name, source in _table(data, "modules").items():
        (folder / f"{name}.py").write_text(str(source), encoding="utf-8")
    fixtures = _table(data, "fixtures")
    if fixtures:
        (folder / "fixtures").mkdir()
        for name, text in fixtures.items():
            (folder / "fixtures" / name).write_text(str(text), encoding="utf-8")
    return suite_path


def _table(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise TypeError(f"{key} must be a table")
    return value


def _positive_int(value: Any, key: str) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{key} must be a positive integer")
    return value


def _size(value: Any, key: str) -> int:
    if type(value) is int and value > 0:
        return value
    if isinstance(value, str):
        from cer.config import parse_size

        return parse_size(value)
    raise ValueError(f"{key} must be a byte count or a size such as 512M")


def _options(data: Mapping[str, Any]) -> RunOptions:
    given = _table(data, "options")
    unknown = sorted(set(given) - _OPTION_KEYS)
    if unknown:
        raise ValueError(f"unknown self-check options: {', '.join(unknown)}")
    entry = str(data.get("entry", "f"))
    impl = entry if ":" in entry else f"{SUBJECT}:{entry}"
    chosen = {key: tuple(str(item) for item in given.get(key, ())) for key in _SELECTIONS}
    selection = Selection(
        case_globs=chosen["case"],
        categories=chosen["category"],
        classes=chosen["class"],
        tags=chosen["tag"],
        substrings=chosen["k"],
    )
    extra: dict[str, Any] = {}
    if "max_memory" in given:
        extra["max_memory"] = _size(given["max_memory"], "max_memory")
    if "capture_limit" in given:
        extra["capture_limit"] = _size(given["capture_limit"], "capture_limit")
    timeout = given.get("timeout", DEFAULT_TIMEOUT)
    return RunOptions(
        impl=impl,
        timeout=float(timeout) if isinstance(timeout, int | float) else timeout,
        # The isolation and the sandbox are checked by the run.
        isolation=cast(Isolation, str(given.get("isolation", DEFAULT_ISOLATION))),
        sandbox=cast(SandboxMode, str(given.get("sandbox", DEFAULT_SANDBOX))),
        selection=selection,
        category_models={str(k): str(v) for k, v in _table(given, "categories").items()},
        **extra,
    )


def _fingerprint(suite: Suite) -> str:
    """Everything about the loaded cases that a run must leave exactly as it was."""
    return repr(
        [
            (
                case.name,
                case.case_class,
                case.category,
                case.position,
                dict(case.input),
                dict(case.expect),
                case.tags,
                case.verifies,
            )
            for case in suite.cases
        ]
    )


def _run_fingerprint(run: RunResult) -> str:
    return repr(
        [
            (r.case_name, r.status.value, r.reason, r.mismatches, _without_time(r.observation))
            for r in run.results
        ]
    )


def _without_time(observation: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if observation is None:
        return None
    return {key: value for key, value in observation.items() if key != "elapsed_ms"}


def _check_invariants(suite: Suite, run: RunResult, events: Sequence[RunEvent]) -> None:
    """Raise InvariantBroken when ``run`` breaks a rule that always holds."""
    problems = []
    declared = [(c.name, c.case_class, c.category, c.position) for c in suite.cases]
    reported = [(r.case_name, r.case_class, r.category, r.position) for r in run.results]
    if reported != declared:
        problems.append(f"results {reported} are not the declared cases {declared}")
    summary = run.summary
    counted = summary.passed + summary.failed + summary.skipped + summary.errored
    if summary.total != len(suite.cases) or counted != summary.total:
        problems.append(f"the summary {summary} does not add up to {len(suite.cases)} cases")
    for result in run.results:
        if result.status is Status.PASS and (result.observation is None or result.mismatches):
            problems.append(f"{result.case_name} passed without a clean observation")
        if result.status is not Status.PASS and not result.reason:
            problems.append(f"{result.case_name} is {result.status.value} without a reason")
        if result.status is Status.FAIL and not result.mismatches:
            problems.append(f"{result.case_name} failed without a mismatch")
    kinds = [type(event).__name__ for event in events]
    finished = [event for event in events if isinstance(event, CaseFinished)]
    if not (events and isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)):
        problems.append(f"events are not RunStarted ... RunFinished: {kinds}")
    if [event.done for event in finished] != list(range(1, len(suite.cases) + 1)):
        problems.append("CaseFinished events do not count every case once")
    loads = [i for i, kind in enumerate(kinds) if kind.startswith("Implementation")]
    if loads and "CaseFinished" in kinds and kinds.index("CaseFinished") < loads[0]:
        problems.append(f"a case finished before the implementation event: {kinds}")
    if problems:
        raise InvariantBroken("; ".join(problems))


def _observe(
    suite: Suite, run: RunResult, events: Sequence[RunEvent], wall_ms: int
) -> dict[str, Any]:
    summary = run.summary
    observation: dict[str, Any] = {
        "statuses": [r.status.value for r in run.results],
        "names": [r.case_name for r in run.results],
        "classes": [r.case_class for r in run.results],
        "categories": [r.category for r in run.results],
        "summary": {
            "total": summary.total,
            "passed": summary.passed,
            "failed": summary.failed,
            "skipped": summary.skipped,
            "errored": summary.errored,
        },
        "verdict": summary.verdict,
        "notes": "\n".join(run.notes),
        "warnings": "\n".join(suite.warnings),
        "format_version": run.format_version,
        "target_module": run.target_module,
        "events": _compress([type(event).__name__ for event in events]),
        "wall_ms": wall_ms,
    }
    for r in run.results:
        observation[f"reason_{r.case_name}"] = r.reason
        observation[f"stdout_{r.case_name}"] = r.stdout
        observation[f"stderr_{r.case_name}"] = r.stderr
        observation[f"traceback_{r.case_name}"] = r.traceback
        observation[f"observed_{r.case_name}"] = _without_time(r.observation)
        observation[f"paths_{r.case_name}"] = [m.path for m in r.mismatches]
        observation[f"elapsed_{r.case_name}"] = r.elapsed_ms
    return observation


def _compress(kinds: list[str]) -> list[str]:
    """Event kinds with runs of CaseFinished written once, as ``CaseFinished*N``."""
    out: list[str] = []
    for kind in kinds:
        if out and out[-1].split("*")[0] == kind == "CaseFinished":
            count = int(out[-1].split("*")[1]) if "*" in out[-1] else 1
            out[-1] = f"{kind}*{count + 1}"
        else:
            out.append(kind)
    return out

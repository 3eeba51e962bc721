"""Deterministic suites, results and a fake runner for the UI tests.

The fake has the real runner's signature and emits the same events in the same order,
built from model objects with fixed times, so that the app cannot tell the difference
and snapshots do not move.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from textual.worker import WorkerState

from cer import events
from cer.engine.options import RunCancelled, RunOptions
from cer.model import Case, CaseResult, Mismatch, RunResult, SourceAccess, Status, Suite
from cer.suite.selection import Selection
from cer.tui.app import CerApp
from cer.tui.screens.run import RunScreen
from cer.tui.state import details

Outcome = Callable[[Case], CaseResult]
_RUN_IDS = itertools.count(1)
"""Run ids stay unique across runners, as the real runner's do, so that several apps can
record into one history."""


def make_case(
    name: str,
    position: int,
    *,
    case_class: str = "functional",
    category: str = "functional",
    tags: tuple[str, ...] = (),
    severity: str | None = None,
    description: str | None = None,
    input: Mapping[str, Any] | None = None,
    expect: Mapping[str, Any] | None = None,
    verifies: tuple[str, ...] = (),
) -> Case:
    return Case(
        name=name,
        case_class=case_class,
        category=category,
        position=position,
        array_index=position,
        input=input if input is not None else {"source": f"{name} input"},
        expect=expect if expect is not None else {"output": f"{name} output"},
        description=description,
        tags=tags,
        severity=severity,
        verifies=verifies,
        line=1 + 6 * (position - 1),
    )


def make_suite(cases: Iterable[Case], path: Path = Path("evals.toml")) -> Suite:
    cases = tuple(cases)
    return Suite(
        path=path,
        format_version="0.2",
        target="calc",
        target_version="^1.0",
        cases=cases,
        content_hash=str(hash(tuple(case.name for case in cases))),
    )


def triage_suite(path: Path = Path("evals.toml")) -> Suite:
    """Twelve cases across classes, categories, severities and tag prefixes."""
    specs: list[tuple[str, str, str, tuple[str, ...], str | None]] = [
        ("adds-integers", "functional", "functional", ("upstream-section:Arithmetic",), None),
        ("adds-floats", "functional", "functional", ("upstream-section:Arithmetic",), None),
        ("renders-tabs", "functional", "functional", ("upstream-section:Tabs", "html"), None),
        ("renders-list", "functional", "functional", ("upstream-section:Lists", "html"), None),
        ("keeps-final-newline", "functional", "functional", ("upstream-section:Tabs",), None),
        ("reports-version", "functional", "interface", (), None),
        ("first-result-fast", "functional", "timing", (), None),
        ("rejects-empty", "adversarial", "input-validation", ("hostile",), "critical"),
        ("survives-deep-nesting", "adversarial", "failure-mode", ("hostile",), "error"),
        ("bounded-memory", "adversarial", "resource", (), "error"),
        (
            "divides-by-zero",
            "generator_adversary",
            "functional",
            ("upstream-section:Arithmetic",),
            None,
        ),
        ("parses-unicode-minus", "generator_adversary", "functional", (), None),
    ]
    return make_suite(
        (
            make_case(
                name,
                i,
                case_class=case_class,
                category=category,
                tags=tags,
                severity=severity,
                description=f"Checks that the implementation {name.replace('-', ' ')}.",
            )
            for i, (name, case_class, category, tags, severity) in enumerate(specs, 1)
        ),
        path,
    )


def passing(case: Case) -> CaseResult:
    return result_for(case, Status.PASS)


def result_for(
    case: Case,
    status: Status,
    *,
    reason: str | None = None,
    mismatches: tuple[Mismatch, ...] = (),
    stdout: str = "",
    stderr: str = "",
    traceback: str | None = None,
    observation: Mapping[str, Any] | None = None,
) -> CaseResult:
    return CaseResult(
        case_name=case.name,
        case_class=case.case_class,
        category=case.category,
        status=status,
        reason=reason,
        stdout=stdout,
        stderr=stderr,
        traceback=traceback,
        elapsed_ms=3 + (case.position * 7) % 40,
        observation={} if observation is None else observation,
        mismatches=mismatches,
        position=case.position,
    )


def triage_outcome(case: Case) -> CaseResult:
    """A mix of every status, with string diffs that hinge on whitespace."""
    if case.name == "renders-tabs":
        expected = "<pre><code>\tfoo\tbaz\t\tbim\n</code></pre>\n"
        observed = "<pre><code>    foo baz     bim\n</code></pre>\n"
        return result_for(
            case,
            Status.FAIL,
            reason="html: line 1 differs at column 12",
            mismatches=(Mismatch("html", "line 1 differs at column 12", expected, observed),),
            stdout="rendering 1 block\n",
        )
    if case.name == "keeps-final-newline":
        return result_for(
            case,
            Status.FAIL,
            reason="html: the final newline is missing",
            mismatches=(
                Mismatch("html", "the final newline is missing", "<p>a  \nb</p>\n", "<p>a\nb</p>"),
            ),
        )
    if case.name == "survives-deep-nesting":
        return result_for(
            case,
            Status.ERRORED,
            reason="RecursionError: maximum recursion depth exceeded",
            stderr="warning: deep input\n",
            traceback=(
                "Traceback (most recent call last):\n"
                '  File "calc.py", line 12, in evaluate\n'
                "    return evaluate(node.child)\n"
                "RecursionError: maximum recursion depth exceeded\n"
            ),
        )
    if case.name == "bounded-memory":
        return result_for(case, Status.SKIPPED, reason="category not supported: resource")
    if case.name == "divides-by-zero":
        return result_for(
            case,
            Status.FAIL,
            reason="output: expected an error",
            mismatches=(
                Mismatch("output.value", "expected 0, observed None", 0, None),
                Mismatch("output.items[1]", "lists differ", [1, 2, {"a": 1}], [1, 3, {"a": 2}]),
            ),
        )
    return passing(case)


@dataclass
class FakeRunner:
    """A ``run_suite`` stand-in: results come from ``outcome``; it can pause mid-run."""

    outcome: Outcome = passing
    sources: tuple[str, ...] = ()
    block_after: int | None = None
    """On the first call, wait for the cancel event after this many cases."""
    import_failure: tuple[str, str] | None = None
    calls: list[Selection] = field(default_factory=list)
    options: list[RunOptions] = field(default_factory=list)
    """Every call's options, in order."""
    finished: list[list[str]] = field(default_factory=list)
    """Per call, the case names in the order their results were streamed."""
    cancelled: int = 0
    started: threading.Event = field(default_factory=threading.Event)

    def __call__(
        self,
        suite: Suite,
        options: RunOptions,
        *,
        on_event: Callable[[events.RunEvent], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> RunResult:
        emit = on_event or (lambda event: None)
        number = len(self.calls)
        self.calls.append(options.selection)
        self.options.append(options)
        streamed: list[str] = []
        self.finished.append(streamed)
        self.started.set()
        selection = options.selection
        emit(events.RunStarted(f"run-{number}", suite, options.impl, len(suite.cases)))
        if self.import_failure is not None:
            reason, trace = self.import_failure
            emit(events.ImplementationFailed(reason, trace))
        else:
            emit(events.ImplementationLoaded(f"{options.impl}@fake", self.sources))
        results: list[CaseResult] = []
        # As the real runner does: the cases named first run first.
        ordered = sorted(suite.cases, key=lambda case: case.name not in options.first)
        for index, case in enumerate(ordered):
            if cancel is not None and cancel.is_set():
                self.cancelled += 1
                raise RunCancelled()
            if number == 0 and self.block_after is not None and index == self.block_after:
                assert cancel is not None
                if cancel.wait(10):
                    self.cancelled += 1
                    raise RunCancelled()
            if self.import_failure is not None:
                # As the real runner does: nothing was observed.
                result = replace(
                    result_for(case, Status.ERRORED, reason=self.import_failure[0]),
                    observation=None,
                )
            elif selection.is_everything or selection.selects(case):
                result = self.outcome(case)
            else:
                result = result_for(case, Status.SKIPPED, reason="deselected")
            results.append(result)
            streamed.append(case.name)
            emit(events.CaseFinished(result, index + 1, len(suite.cases)))
        results.sort(key=lambda result: result.position)  # declared order, as promised
        run = RunResult(
            run_id=f"run-{next(_RUN_IDS):06d}-{number}",
            target_module=suite.target or "",
            implementation_id=f"{options.impl}@fake",
            started_at_ms=1_700_000_000_000,
            completed_at_ms=1_700_000_001_234,
            results=tuple(results),
            implementation=options.impl,
            suite_path=str(suite.path),
            suite_hash=suite.content_hash,
            # As the real runner does: the files it checked as loaded, read unconfined.
            source_access=SourceAccess(files=self.sources) if self.sources else None,
        )
        emit(events.RunFinished(run))
        return run


TABS = "<pre><code>\tfoo\tbaz\n</code></pre>\n"
SPACES = "<pre><code>    foo baz\n</code></pre>\n"


def ref_outcome(case: Case) -> CaseResult:
    """The first of two implementations: the triage mix, with observations the other
    one differs from."""
    result = triage_outcome(case)
    if case.name == "adds-integers":
        return replace(result, observation={"output": 2})
    if case.name == "renders-tabs":
        return replace(result, observation={"html": SPACES})
    if case.name == "survives-deep-nesting":
        return replace(result, observation=None)
    return result


def other_outcome(case: Case) -> CaseResult:
    """Passes with another type where the suite cannot tell, renders tabs right, and
    errors on a case the reference passes."""
    if case.name == "adds-integers":
        return result_for(case, Status.PASS, observation={"output": 2.0})
    if case.name == "renders-tabs":
        return result_for(case, Status.PASS, observation={"html": TABS})
    if case.name == "reports-version":
        return replace(
            result_for(case, Status.ERRORED, reason="TypeError: boom", stderr="other says hi\n"),
            observation=None,
        )
    return ref_outcome(case)


@dataclass
class Implementations:
    """A ``run_suite`` stand-in for several implementations: each ``--impl`` value has a
    fake runner of its own, so that each can observe, fail, block or crash on its own.
    ``order`` lists the implementations in the order they were run."""

    runners: Mapping[str, FakeRunner]
    order: list[str] = field(default_factory=list)

    def __call__(
        self,
        suite: Suite,
        options: RunOptions,
        *,
        on_event: Callable[[events.RunEvent], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> RunResult:
        self.order.append(options.impl)
        return self.runners[options.impl](suite, options, on_event=on_event, cancel=cancel)


def fixed_loader(suite: Suite) -> Callable[[Path], Suite]:
    """A ``load`` that ignores the file and returns ``suite``."""

    def load(path: Path) -> Suite:
        return suite

    return load


async def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll ``condition`` on the event loop until it holds; fail after ``timeout``, which
    is generous: it bounds a broken test, it does not measure speed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(0.01)


def _busy(app: CerApp) -> bool:
    return any(
        worker.group in ("run", "details", "coverage", "history", "matrix")
        and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)
        for worker in app.workers
    )


def run_screen(app: CerApp) -> RunScreen:
    """The app's main view, at the bottom of the screen stack whatever is over it."""
    screen = app.screen_stack[0]
    assert isinstance(screen, RunScreen)
    return screen


def tabs(to: str, *, start: str = "reason", back: bool = False) -> tuple[str, ...]:
    """The keys that bring the pane ``to`` on view from the pane ``start`` (``tab``, or
    ``shift+tab`` with ``back``), counted in the pane table's order
    (:data:`cer.tui.state.details.PANES`, read when called) rather than spelled out."""
    names = [pane.name for pane in details.PANES]
    steps = names.index(to) - names.index(start)
    return ("shift+tab",) * (-steps % len(names)) if back else ("tab",) * (steps % len(names))


async def settle(app: CerApp, runs: int = 1) -> None:
    """Wait for ``runs`` runs to finish and for the detail panes to be drawn."""
    await wait_until(lambda: app.session.runs_finished >= runs and not app.session.board.running)
    for _ in range(2):
        await wait_until(lambda: not _busy(app) and run_screen(app).details_settled)
        await asyncio.sleep(0.02)


def screen_text(app: CerApp) -> str:
    """The screen as plain text, one line per row, for assertions and debugging."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip).rstrip() for strip in strips)

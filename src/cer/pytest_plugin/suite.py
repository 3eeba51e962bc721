"""What the pytest plugin keeps for one suite while pytest runs its items: the suite's
one run per process (every case at once, through :func:`~cer.engine.runner.run_suite`),
the merge of the runs of pytest-xdist's workers, and the text of a failed case."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pytest

from cer.categories import CategoryConfigError
from cer.engine.options import RunCancelled, RunOptions
from cer.engine.python.workerproc import WarmWorkers
from cer.engine.runner import run_suite
from cer.events import CaseFinished, ImplementationLoaded, RunEvent, RunFinished
from cer.model import (
    CASE_CLASS_TO_ARRAY,
    Case,
    CaseResult,
    RunConditions,
    RunResult,
    RunSelection,
    Status,
    Suite,
)
from cer.suite.selection import Selection
from cer.text.safetext import for_terminal
from cer.text.tomltext import input_line
from cer.text.tracebacks import trim


@dataclass
class SuiteState:
    """What one process knows about one collected suite: its options, and the result of
    every case it ran."""

    suite: Suite
    options: RunOptions
    results: dict[str, CaseResult] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    """Cases whose run could not happen at all, with the reason (errored in pytest)."""
    attempted: set[str] = field(default_factory=set)
    implementation_id: str = ""
    notes: list[str] = field(default_factory=list)
    started_at_ms: int = 0
    completed_at_ms: int = 0
    chosen_by: str = "pytest"
    """How pytest chose the cases it ran (``pytest -k 'parse'``), for the conditions."""
    conditions: RunConditions | None = None
    """What the cer runs of this process ran under (the last one's)."""

    def run(self, names: Sequence[str], stop_after: int, warm: WarmWorkers | None = None) -> None:
        """Run ``names`` (in this order) in one cer run; with ``stop_after`` > 0 the run
        is cancelled once ``stop_after`` of them failed or errored with every case
        before them in ``names`` decided (pytest stops there: -x, --maxfail, --sw)."""
        self.attempted.update(names)
        started = int(time.time() * 1000)
        self.started_at_ms = self.started_at_ms or started
        cancel = threading.Event()
        order = list(names)
        wanted = set(order)

        def stop_now() -> bool:
            bad = 0
            for name in order:
                found = self.results.get(name)
                if found is None:
                    return False
                if found.status in (Status.FAIL, Status.ERRORED):
                    bad += 1
                    if bad >= stop_after:
                        return True
            return False

        def on_event(event: RunEvent) -> None:
            if isinstance(event, ImplementationLoaded) and not self.implementation_id:
                self.implementation_id = event.implementation_id
            elif isinstance(event, CaseFinished) and event.result.case_name in wanted:
                self.results[event.result.case_name] = event.result
                if stop_after > 0 and not cancel.is_set() and stop_now():
                    cancel.set()
            elif isinstance(event, RunFinished):
                run = event.run
                self.implementation_id = run.implementation_id
                self.conditions = run.conditions
                self.notes.extend(note for note in run.notes if note not in self.notes)

        options = replace(self.options, selection=Selection(names=frozenset(names)))
        try:
            run_suite(self.suite, options, on_event=on_event, cancel=cancel, warm=warm)
        except RunCancelled:
            pass
        except (CategoryConfigError, ValueError) as exc:
            for name in names:
                self.failures.setdefault(name, f"the run could not start: {exc}")
        finally:
            self.completed_at_ms = int(time.time() * 1000)

    def combined(self) -> RunResult | None:
        """One run holding every case this process ran; the others are skipped as
        ``deselected`` (they prove nothing). None when nothing ran."""
        if not self.results:
            return None
        results = []
        for case in self.suite.cases:
            found = self.results.get(case.name)
            if found is None:
                found = CaseResult(
                    case.name,
                    case.case_class,
                    case.category,
                    Status.SKIPPED,
                    "deselected",
                    position=case.position,
                )
            results.append(found)
        return RunResult(
            run_id=os.urandom(16).hex(),
            target_module=self.suite.target_module,
            implementation_id=self.implementation_id or self.options.impl,
            started_at_ms=self.started_at_ms,
            completed_at_ms=self.completed_at_ms or self.started_at_ms,
            results=tuple(results),
            suite_path=str(self.suite.path),
            suite_hash=self.suite.content_hash,
            format_version=self.suite.format_version,
            implementation=self.options.impl,
            notes=tuple(self.notes),
            conditions=self._conditions(),
        )

    def _conditions(self) -> RunConditions | None:
        """The runs' conditions, with the selection of the whole: the cases pytest
        selected, and how (every case when it selected them all)."""
        if self.conditions is None:
            return None
        ran = len(self.attempted)
        everything = self.attempted >= {case.name for case in self.suite.cases}
        selection = (
            RunSelection() if everything else RunSelection(named=ran, chosen_by=self.chosen_by)
        )
        return replace(self.conditions, selection=selection)


def merge_process_runs(runs: Sequence[RunResult]) -> RunResult:
    """Combine the runs of several processes (xdist workers) of one suite: for each
    case the result of a process that ran it, else the deselected skip."""
    first = runs[0]
    results = []
    for index, base in enumerate(first.results):
        chosen = base
        for run in runs:
            candidate = run.results[index]
            if not (candidate.status is Status.SKIPPED and candidate.reason == "deselected"):
                chosen = candidate
                break
        results.append(chosen)
    notes: list[str] = []
    for run in runs:
        notes.extend(note for note in run.notes if note not in notes)
    identities = sorted({run.implementation_id for run in runs})
    if len(identities) > 1:
        notes.append(
            "the implementation's source changed during the run: processes imported "
            f"{', '.join(identities)}, so results may mix versions"
        )
    conditions = first.conditions
    if conditions is not None:  # the selection of all the processes together
        ran = sum(
            1 for r in results if not (r.status is Status.SKIPPED and r.reason == "deselected")
        )
        chosen_by = conditions.selection.chosen_by
        selection = (
            RunSelection() if ran == len(results) else RunSelection(named=ran, chosen_by=chosen_by)
        )
        conditions = replace(conditions, selection=selection)
    return replace(
        first,
        run_id=os.urandom(16).hex(),
        started_at_ms=min(run.started_at_ms for run in runs),
        completed_at_ms=max(run.completed_at_ms for run in runs),
        results=tuple(results),
        notes=tuple(notes),
        conditions=conditions,
    )


class CaseFailed(Exception):
    """Raised by an item whose case failed; its text is the whole failure report."""


class CaseErrored(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """Raised in the setup of an item whose case errored: pytest reports it as an
    error, with its text and no traceback, as :func:`pytest.fail` does. A class of
    its own, so that a baseline's ``errored`` entry (an ``xfail`` raising it) never
    takes another failure of the setup (a run that could not start, a case not run)
    for the known error."""

    # pytest's short summary names an exception by its module and class, and does the
    # same for its own Failed: ``CaseErrored: evals.toml:11 ...``, not a dotted path.
    __module__ = "builtins"

    def __init__(self, text: str) -> None:
        super().__init__(text, pytrace=False)


def failure_text(suite: Suite, case: Case, result: CaseResult) -> str:
    """cer's verdict for pytest: where the case is, its input, then the reason with
    every line marked ``E`` as pytest marks an assertion's explanation."""
    line = f":{case.line}" if case.line else ""
    status = {Status.FAIL: "failed", Status.ERRORED: "errored"}.get(result.status, "")
    lines = [
        f"{suite.path.name}{line} [[{CASE_CLASS_TO_ARRAY[case.case_class]}]] "
        f'"{case.name}" ({case.category}) {status}'
    ]
    lines.append(f"    {input_line(case.input, f'{suite.path.name}{line}')}")
    for text in (result.reason or "no reason given").splitlines() or [""]:
        lines.append(f"E   {text}")
    if result.traceback and result.status is Status.ERRORED:
        lines.append("")
        lines.append("implementation traceback:")
        # Without the runner's own frames, as cer run and cer-tui show it (cer.text.tracebacks).
        shown = trim(result.traceback).rstrip()
        lines.extend(f"    {text}" for text in shown.splitlines())
    # The implementation's text is shown, never obeyed by the terminal (cer.text.safetext).
    return for_terminal("\n".join(lines))

"""The supervisor: runs a suite against an implementation and reports the truth.

The supervisor never imports the implementation. It plans every case (outside the
shard, deselected, unsupported category, missing fixture, nothing to verify), hands
the runnable ones to one or more worker processes in declared order, enforces deadlines
from outside, turns each reported observation into a verdict, and returns exactly one
result per declared case, in declared order. See docs/execution-model.md.

The run is planned in :mod:`cer.engine.plan`; the cases are then run by the backend
of the implementation's kind (:mod:`cer.engine.kinds`), an
:class:`~cer.engine.execution.Execution` built from the run's
:class:`~cer.engine.execution.Setup`: the worker pool (:mod:`cer.engine.python`) for
Python, :mod:`cer.engine.command` for commands.
With several workers (``jobs``) one thread still does all of this: it waits on every
worker's channel at once, so results, verdicts and events are made in one place, one
at a time, exactly as with a single worker.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from cer import sandbox
from cer.categories import ENTRY_POINT_PREFIX, build_registry
from cer.engine import confinement, spawned
from cer.engine.allocator import free_large_buffers_promptly
from cer.engine.execution import Execution, Setup
from cer.engine.kinds import kind_named
from cer.engine.options import (
    RunOptions,
    check_options,
    resolve_jobs,
    search_paths,
)
from cer.engine.plan import plan, shard_note
from cer.engine.python.provided import Provided, describe
from cer.engine.python.workerproc import WarmWorkers
from cer.events import (
    RunEvent,
    RunFinished,
    RunStarted,
)
from cer.judge.verdict import (
    errored,
)
from cer.model import (
    ImplementationOrigin,
    RunConditions,
    RunResult,
    RunSelection,
    SourceAccess,
    Suite,
)
from cer.sandbox import readset
from cer.sandbox.scratch import make_run_folder
from cer.sandbox.scratch import remove as remove_scratch
from cer.text.safetext import scrub

__all__ = ["run_conditions", "run_suite"]


def _now_ms() -> int:
    return int(time.time() * 1000)


_SCRATCH_UNLISTABLE = 0o300
"""The run's scratch folder's mode while cases run: its owner may make, enter and
remove entries, but not list them."""


def run_suite(
    suite: Suite,
    options: RunOptions,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    cancel: threading.Event | None = None,
    warm: WarmWorkers | None = None,
) -> RunResult:
    """Run every case of ``suite`` and return one result per case in declared order.

    ``on_event`` is called from the calling thread only, one event at a time, whatever
    ``options.jobs`` is. ``warm`` supplies workers started ahead of time; it is
    refilled when the run ends, for the next one.

    Raises RunCancelled when ``cancel`` is set before the run completes (the workers
    are killed first), ValueError for options that make no sense, and
    :class:`cer.engine.confinement.SandboxUnavailable` (a ValueError) when the sandbox the
    options ask for cannot be had here.
    """
    if type(options.impl) is not str and callable(options.impl):  # type() cannot lie
        # A callable given as impl is the implementation itself, as if given as such.
        options = replace(options, impl="", implementation=options.impl)
    check_options(options)
    provided: Provided | None = None
    if options.implementation is not None:
        # Named and identified here, once, from its code: nothing imports it.
        provided = describe(options.implementation)
        options = replace(options, impl=provided.name)
    free_large_buffers_promptly()
    decision = confinement.decide(options.sandbox, options.network)
    scratch = make_run_folder() if decision.abi else None
    if scratch is not None:
        # Write and search, no listing: each worker's, harness's and per-case command's
        # folder in it has a name no case can guess, and must not be found by a case of
        # another worker (or a per-case command's one not removed yet) through a
        # listing. The implementation's side holds no capability that would read past
        # the mode.
        os.chmod(scratch, _SCRATCH_UNLISTABLE)
    try:
        with spawned.owned_by(spawned.new_token()):  # its processes, for end_strays
            return _run_suite(suite, options, decision, scratch, on_event, cancel, warm, provided)
    finally:
        if scratch is not None:
            with contextlib.suppress(OSError):
                os.chmod(scratch, 0o700)  # listable again, to be removed whole
            remove_scratch(scratch)


def _run_suite(
    suite: Suite,
    options: RunOptions,
    decision: confinement.Decision,
    scratch: str | None,
    on_event: Callable[[RunEvent], None] | None,
    cancel: threading.Event | None,
    warm: WarmWorkers | None,
    provided: Provided | None = None,
) -> RunResult:
    emit = on_event or (lambda event: None)
    registry = build_registry(options.category_models)
    run_id = os.urandom(16).hex()  # like uuid4().hex, without importing uuid
    started = _now_ms()
    kind = kind_named(options.kind)
    notes: list[str] = []
    policy: sandbox.Policy | None = None
    refused: list[readset.Refusal] = []
    each_case = True
    if scratch is not None:
        policy, refused = confinement.build(
            suite,
            options,
            scratch,
            search_paths(suite, options),
            world=decision.world,
            network=decision.network,
        )
        unrecorded = readset.remember_outputs(options.protected)
        if unrecorded:
            notes.append(unrecorded)
        # Every process of the implementation's side is then under the seccomp filter,
        # which refuses prlimit on any other process: none can change cer's limits.
        each_case = not sandbox.filters()
    if options.isolation == "fork" and not hasattr(os, "fork"):
        notes.append("fork is not available here: cases ran without isolation")
        options = replace(options, isolation="none")
    if options.shard is not None:
        notes.append(shard_note(options.shard, len(suite.cases)))
    emit(
        RunStarted(run_id, suite, options.impl, len(suite.cases), run_conditions(options, decision))
    )
    runnable, decided = plan(suite, options, registry)
    plugins = tuple(
        sorted(
            {
                (item.case.category, registry.provider_for(item.case.category))
                for item in runnable
                if kind.python and item.model.startswith(ENTRY_POINT_PREFIX)
            }
        )
    )
    for category, provider in plugins:
        notes.append(f"category {category}: its cases were run by the plugin {provider}")
    setup = Setup(
        suite,
        options,
        emit,
        cancel,
        sandbox=decision,
        policy=policy,
        refused=tuple(refused),
        notes=tuple(notes),
        decided=tuple(decided),
        limits_each_case=each_case,
    )
    backend = kind.load_backend()
    # The kind says which backend runs it; a Python implementation's also takes the
    # workers started ahead of time and the object given as the implementation.
    execution = backend(setup, warm=warm, provided=provided) if kind.python else backend(setup)
    if not isinstance(execution, Execution):  # a kind's backend is an Execution
        raise TypeError(f"the backend of the kind {kind.name} is not an Execution")
    if not runnable:
        execution.flush_deferred()
    try:
        execution.run(runnable)
    except BaseException:
        execution.kill()
        execution.end_strays()
        if warm is not None:
            warm.fill()
        raise
    execution.flush_deferred()
    if execution.not_run:
        cases = "case was" if execution.not_run == 1 else "cases were"
        execution.note(
            f"the run was stopped after {execution.failures} failed or errored "
            f"case{'' if execution.failures == 1 else 's'} (--max-fail {options.max_fail}): "
            f"{execution.not_run} {cases} not run"
        )
    execution.stop()
    execution.end_strays()
    execution.limits.restore()
    if execution.limits.changed:
        execution.note(execution.limits.note())
    if warm is not None:
        warm.fill()
    results = []
    for case in suite.cases:
        found = execution.results.get(case.position)
        if found is None:  # a bug in the runner must never look like a pass
            found = errored(case, "the runner produced no result for this case", fail_class="lost")
        results.append(found)
    run = RunResult(
        run_id=run_id,
        target_module=suite.target_module,
        implementation_id=scrub(execution.implementation_id),
        started_at_ms=started,
        completed_at_ms=_now_ms(),
        results=tuple(results),
        suite_path=str(suite.path),
        suite_hash=suite.content_hash,
        format_version=suite.format_version,
        implementation=scrub(options.impl),
        notes=tuple(scrub(note) for note in execution.notes),
        conditions=replace(
            run_conditions(options, decision, execution.memory_method()),
            category_plugins=tuple((c, scrub(p)) for c, p in plugins),
        ),
        origin=_declared(execution.declared),
        source_access=_source_access(execution, decision),
    )
    emit(RunFinished(run))
    return run


_ORIGIN_CHARS = 200
"""How much of a declared name or version is kept: a name, not a document."""


def _declared(declared: tuple[str, str] | None) -> ImplementationOrigin | None:
    """What a command harness declared itself, cut and scrubbed (its own words)."""
    if declared is None:
        return None
    name, version = (scrub(word[:_ORIGIN_CHARS]) for word in declared)
    return ImplementationOrigin(name, version, "harness")


def _source_access(execution: Execution, decision: confinement.Decision) -> SourceAccess:
    """The files a code frame may show (what the backend knows the implementation to
    be made of, :meth:`~cer.engine.execution.Execution.source_files`) and how to read
    them with the implementation's rights (under the run's rules, if any)."""
    files = execution.source_files()
    reader: tuple[str, ...] = ()
    if execution.policy is not None and decision.abi:
        reader = tuple(sandbox.launcher_command(execution.policy, [], decision.abi))
    return SourceAccess(files=files, confined_reader=reader)


def run_conditions(
    options: RunOptions, decision: confinement.Decision, memory: str = ""
) -> RunConditions:
    """What a run with ``options`` ran under, as its records keep it (``memory``: how
    it measured the memory of cases, when any asked)."""
    import platform

    import cer

    python = kind_named(options.kind).python
    return RunConditions(
        isolation=options.isolation if python else "process",
        sandbox=decision.description,
        network=decision.network_description,
        timeout=options.timeout,
        jobs=resolve_jobs(options.jobs) if python else 1,
        category_remaps=tuple(sorted(options.category_models.items())),
        cer_version=cer.__version__,
        python_version=platform.python_version(),
        memory=memory,
        selection=run_selection(options),
        os=platform.system(),
        kernel=platform.release(),
        architecture=platform.machine(),
        paths=options.paths,
        sandbox_read=options.sandbox_read,
        baseline=options.baseline,
        baseline_sha256=options.baseline_sha256,
        require_coverage=options.require_coverage,
    )


def run_selection(options: RunOptions) -> RunSelection:
    """The selection ``options`` ask for, as the run's conditions record it."""
    selection = options.selection
    names = selection.names
    return RunSelection(
        case_globs=selection.case_globs,
        categories=selection.categories,
        classes=selection.classes,
        tags=selection.tags,
        substrings=selection.substrings,
        named=None if names is None else len(names),
        chosen_by=selection.chosen_by if names is not None else "",
        shard="" if options.shard is None else f"{options.shard[0]}/{options.shard[1]}",
    )

"""Planning a run: which cases are run, and which are decided before anything runs
(another shard, deselected, an unsupported category, a missing fixture, nothing to
verify, something the runner cannot observe for this kind of implementation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cer.categories import CategoryRegistry
from cer.engine.kinds import kind_named
from cer.engine.options import (
    OTHER_SHARD,
    RunOptions,
    in_shard,
)
from cer.judge.compare import OPERATORS
from cer.judge.verdict import (
    errored,
    key_facts,
    skipped,
    unmeasured_reason,
    vacuous_reason,
)
from cer.model import Case, CaseResult, Suite
from cer.suite.fixtures import FIXTURE_SCHEME, resolve_fixtures
from cer.wire.plaindata import MAX_DEPTH, MAX_NODES, NotPlainData, to_wire


@dataclass(frozen=True)
class Planned:
    """A case the runner will run: its input with fixture paths resolved, and the
    execution model its category runs through."""

    case: Case
    input: dict[str, Any]
    model: str
    alone: bool = False
    """The case runs inline in a worker of its own, a process the supervisor started and
    reaps itself: its crash and its memory are then the runner's own observation (see
    :meth:`cer.engine.python.alone.AloneCases.run_alone`)."""
    timed: bool = False
    """The case has a time bound the runner measures (``elapsed_ms_max``/``_min``): it
    runs after the others, with no other case in flight, unless the options say
    ``parallel_bounds``."""


def plan(
    suite: Suite, options: RunOptions, registry: CategoryRegistry
) -> tuple[list[Planned], list[CaseResult]]:
    """Split the suite into cases to run and cases already decided without running."""
    runnable: list[Planned] = []
    decided: list[CaseResult] = []
    selection = options.selection
    shard = options.shard
    everything = selection.is_everything
    fixtures_dir = suite.fixtures_dir
    python = kind_named(options.kind).python  # memory is measured, alone, in cer's workers
    for case in suite.cases:
        if shard is not None and not in_shard(case.position, shard):
            decided.append(skipped(case, OTHER_SHARD))
            continue
        if not everything and not selection.selects(case):
            decided.append(skipped(case, "deselected"))
            continue
        model = registry.model_for(case.category)
        if model is None:
            decided.append(skipped(case, f"category not supported: {case.category}"))
            continue
        expect = case.expect  # decoded afresh on every read: once here
        if not expect:
            decided.append(
                errored(
                    case,
                    "could not verify: the case's expect table is empty",
                    fail_class="unverifiable",
                )
            )
            continue
        unmeasured, memory = key_facts(expect)
        if unmeasured:
            decided.append(
                errored(case, unmeasured_reason(list(unmeasured)), fail_class="unverifiable")
            )
            continue
        vacuous = vacuous_reason(expect)
        if vacuous:
            decided.append(errored(case, vacuous, fail_class="unverifiable"))
            continue
        if memory and not python:
            decided.append(
                errored(
                    case,
                    "could not verify resident_memory_mb: the runner measures it only for "
                    "Python implementations (a command's processes are not its own to "
                    "account for)",
                    fail_class="unverifiable",
                )
            )
            continue
        given = case.input
        resolved = given if type(given) is dict else dict(given)
        names_fixture, oversized = input_facts(resolved)
        if oversized:
            decided.append(errored(case, input_bounds_reason(resolved), fail_class="not_run"))
            continue
        if names_fixture:
            resolved, missing = resolve_fixtures(resolved, fixtures_dir)
            if missing:
                names = ", ".join(missing)
                decided.append(
                    errored(
                        case,
                        f"missing fixture: {names} (looked in {fixtures_dir})",
                        fail_class="not_run",
                    )
                )
                continue
        alone = python and (memory or expect.get("crashed") is True)
        timed = not options.parallel_bounds and any(
            f"elapsed_ms{operator.name}" in expect
            for operator in OPERATORS.values()
            if operator.bound is not None
        )
        runnable.append(Planned(case, resolved, model, alone, timed))
    if options.first:
        first = options.first
        runnable.sort(key=lambda item: item.case.name not in first)  # stable
    return runnable, decided


_SCALARS = frozenset({int, float, bool, type(None)})


def input_facts(value: Any) -> tuple[bool, bool]:
    """Whether ``value`` holds a ``fixture://`` string anywhere (what
    :func:`cer.suite.fixtures.resolve_fixtures` replaces; most inputs hold none, and their
    copy needs no resolving), and whether it is nested deeper or holds more values than
    the runner sends (the limits of :mod:`cer.wire.plaindata`, for every kind of
    implementation). One walk, without recursion, which stops at the depth limit: a
    suite's input can be nested hundreds of levels deep."""
    fixture = False
    nodes = 1
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth >= MAX_DEPTH:
            return fixture, True
        kind = type(item)
        if kind is not dict and kind is not list and kind is not tuple:
            continue  # a date, a time or bytes: one value
        children = item.values() if kind is dict else item
        nodes += len(children)
        if nodes > MAX_NODES:
            return fixture, True
        deeper = depth + 1
        for child in children:
            kind = type(child)
            if kind is str:
                if not fixture and child.startswith(FIXTURE_SCHEME):
                    fixture = True
            elif kind not in _SCALARS:
                push((child, deeper))
    return fixture, False


def input_bounds_reason(value: Any) -> str:
    """The reason of a case whose input exceeds what the runner sends."""
    try:
        to_wire(value)
    except NotPlainData as exc:
        where = exc.path if len(exc.path) <= 80 else f"{exc.path[:80]}…"
        problem = f"{where or 'the input'}: {exc.problem}"
    else:  # pragma: no cover - only called for an input to_wire refuses
        problem = "it is too large"
    return (
        f"the case's input cannot be sent to the implementation: {problem} (the runner "
        f"sends at most {MAX_DEPTH} levels of nesting and {MAX_NODES:,} values)"
    )


def shard_note(shard: tuple[int, int], total: int) -> str:
    index, count = shard
    mine = range(index, total + 1, count)
    shown = ", ".join(str(position) for position in mine[:3])
    more = ", …" if len(mine) > 3 else ""
    at = f", at positions {shown}{more} (one in {count})" if len(mine) else ""
    return (
        f"shard {index}/{count}: covers {len(mine)} of the {total} cases{at}; "
        f"the others are skipped as {OTHER_SHARD}"
    )

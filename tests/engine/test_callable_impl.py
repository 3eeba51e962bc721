"""An implementation given as a callable object (the Python API).

``RunOptions(implementation=f)`` runs ``f`` itself, in workers forked from the caller's
process, so that a lambda or a closure works; with the run's isolation and sandbox.
Its name and id say what it is, truthfully: ``callable:MODULE:QUALNAME@HASH`` of its
code, or a one-off id with a note when no code can be found.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cer import RunOptions, load_suite, run_suite
from cer.engine.python.provided import describe
from cer.model import RunResult, Status
from support import Module

P, F, E = Status.PASS, Status.FAIL, Status.ERRORED

SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "two"
category = "functional"
input = { x = 2 }
expect = { output = 6 }

[[cases]]
name = "three"
category = "functional"
input = { x = 3 }
expect = { output = 9 }
"""


def run(module: Module, implementation: Callable[..., Any], **options: Any) -> RunResult:
    path = module.suite(SUITE)
    options.setdefault("timeout", 5.0)
    return run_suite(load_suite(path), RunOptions(implementation=implementation, **options))


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_closure_runs_as_the_implementation(module: Module, isolation: str) -> None:
    factor = 3
    result = run(module, lambda x: x * factor, isolation=isolation)
    assert [r.status for r in result.results] == [P, P]
    name = f"callable:{__name__}:test_a_closure_runs_as_the_implementation.<locals>.<lambda>"
    assert result.implementation == name
    assert result.implementation_id.startswith(f"{name}@")
    assert result.conditions.isolation == isolation
    (note,) = [n for n in result.notes if "given as a Python object" in n]
    assert "forked from the caller's process" in note
    assert "not the values it closes over" in note


def test_a_wrong_callable_fails_and_a_crashing_one_costs_its_case(module: Module) -> None:
    assert [r.status for r in run(module, lambda x: x * 2).results] == [F, F]

    def crashes_on_two(x: int) -> int:
        if x == 2:
            os._exit(9)
        return x * 3

    result = run(module, crashes_on_two, isolation="none")
    assert [r.status for r in result.results] == [E, P]
    assert "ended the worker process" in (result.results[0].reason or "")


def test_the_worker_holds_none_of_the_callers_descriptors(module: Module, tmp_path: Path) -> None:
    with open(tmp_path / "secret", "w") as handle:
        fd = handle.fileno()

        def peek(x: int) -> int:
            try:
                os.fstat(fd)
            except OSError:
                return x * 3  # closed in the worker: the expected answer
            return -1

        result = run(module, peek, isolation="none")
    assert [r.status for r in result.results] == [P, P]


def test_the_sandbox_applies_to_a_callable(module: Module, tmp_path: Path) -> None:
    target = tmp_path / "written-by-the-case"

    def writes(x: int) -> int:
        target.write_text("escaped")
        return x * 3

    result = run(module, writes, sandbox="auto")
    if result.conditions.sandbox.startswith("none"):
        pytest.skip("no sandbox on this machine")
    assert not target.exists()
    assert [r.status for r in result.results] == [E, E]


def test_names_and_ids_say_what_the_callable_is() -> None:
    def f(x: int) -> int:
        return x

    def g(x: int) -> int:
        return x + 1

    class Impl:
        def __call__(self, x: int) -> int:
            return x

    first, again, other = describe(f), describe(f), describe(g)
    assert (
        first.name == f"callable:{__name__}:test_names_and_ids_say_what_the_callable_is.<locals>.f"
    )
    assert first.identity.implementation_id == again.identity.implementation_id  # stable
    assert other.identity.implementation_id != first.identity.implementation_id  # its code
    assert first.identity.files == (os.path.realpath(__file__),)
    partial = describe(functools.partial(g, 1)).identity.implementation_id
    assert partial == other.identity.implementation_id  # the code that runs: g's
    assert describe(Impl()).name.endswith(".<locals>.Impl instance")
    builtin = describe(len)
    assert builtin.name == "callable <builtins.builtin_function_or_method object>"
    assert "@unknown-" in builtin.identity.implementation_id
    assert not builtin.identity.known
    assert "one-off" in builtin.note


def test_a_callable_given_as_impl_is_the_implementation(module: Module) -> None:
    path = module.suite(SUITE)
    options = RunOptions(impl=lambda x: x * 3, timeout=5.0)  # type: ignore[arg-type]
    result = run_suite(load_suite(path), options)
    assert [r.status for r in result.results] == [P, P]
    assert result.implementation.startswith(f"callable:{__name__}:")


def test_impl_and_implementation_are_not_both_given(module: Module) -> None:
    path = module.suite(SUITE)
    with pytest.raises(ValueError, match="not both"):
        run_suite(load_suite(path), RunOptions(impl="m:f", implementation=len))
    with pytest.raises(ValueError, match="impl is empty"):
        run_suite(load_suite(path), RunOptions())


ALONE_SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "crash"
category = "functional"
input = { x = 0 }
expect = { crashed = true }

[[cases]]
name = "memory"
category = "functional"
input = { x = 1 }
expect = { output = 3, resident_memory_mb_max = 100000 }
"""


def test_cases_that_run_alone_fork_the_caller_too_and_memory_is_not_claimed(
    module: Module,
) -> None:
    def impl(x: int) -> int:
        if x == 0:
            os._exit(11)
        return x * 3

    path = module.suite(ALONE_SUITE)
    result = run_suite(load_suite(path), RunOptions(implementation=impl, timeout=5.0))
    crash, memory = result.results
    assert crash.status is P, crash.reason  # seen by the runner: the worker it forked ended
    assert memory.status is E
    assert (memory.reason or "").startswith("could not verify resident_memory_mb")

"""A hostile implementation against the engine's restarts, per-case refusals and
implementations given as objects.

A callable given to ``run_suite`` lives in the supervisor's own process, so the
supervisor must name and identify it without running any of its code (a property, a
metaclass, a ``__format__``), name it in printable words only, and give it an id that
changes whenever the code that runs changes. A restarted harness must not let slow or
hanging starts cost the run more than a few start timeouts. A per-case command that
refuses cases must not make the run any less failed.
"""

from __future__ import annotations

import functools
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from cer import RunOptions, load_suite, run_suite
from cer.engine import identity, restarts
from cer.engine.command import harness
from cer.engine.python import pool, provided
from cer.engine.python.provided import describe
from cer.events import CaseFinished
from cer.model import Status
from support import Module, numbered_suite


def _defined(source: str, name: str) -> Any:
    """``name`` from ``source`` compiled with no file behind it (as in a notebook or
    an ``exec``): only the code itself can tell two versions apart."""
    module = types.ModuleType("hostile_impl")
    sys.modules["hostile_impl"] = module  # where a dataclass looks its module up
    try:
        exec(compile(source, "<hostile>", "exec"), vars(module))
    finally:
        del sys.modules["hostile_impl"]
    return vars(module)[name]


# ------------------------------------------------------------- no code runs in describe


def test_describing_a_callable_runs_none_of_its_code() -> None:
    ran: list[str] = []

    class Meta(type):
        def __getattribute__(cls, name: str) -> Any:
            ran.append(f"metaclass {name}")
            return super().__getattribute__(name)

    class Hooked(metaclass=Meta):
        def __call__(self, x: int) -> int:
            return x

    class LiesAboutItsClass:
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            ran.append("__class__")
            return types.FunctionType

        def __call__(self, x: int) -> int:
            return x

    class Formats(str):
        def __format__(self, spec: str) -> str:
            ran.append("__format__")
            return "formatted"

    class Truthy:
        def __bool__(self) -> bool:
            ran.append("__bool__")
            return True

    def plain(x: int) -> int:
        return x

    plain.__qualname__ = Formats("plain")
    plain.__module__ = Truthy()  # type: ignore[assignment]

    class Partial(functools.partial[Any]):
        @property  # type: ignore[override]
        def func(self) -> Any:
            ran.append("func")
            return plain

    for obj in (Hooked(), Hooked, LiesAboutItsClass(), plain, Partial(plain)):
        describe(obj)
    assert ran == []


def test_a_callable_whose_attributes_raise_gets_a_name_not_a_traceback() -> None:
    class Raises:
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            raise RuntimeError("never read")

        def __call__(self, x: int) -> int:
            return x

    assert describe(Raises()).name.endswith("Raises instance")


# ------------------------------------------------------------------- ids it cannot pick


def test_a_callable_cannot_lend_itself_the_id_of_other_code() -> None:
    def borrowed(x: int) -> int:
        return x

    class Impostor:
        """Claims to be a function whose code is ``borrowed``'s."""

        @property  # type: ignore[misc]
        def __class__(self) -> type:
            return types.FunctionType

        __code__ = borrowed.__code__
        __module__ = borrowed.__module__
        __qualname__ = borrowed.__qualname__

        def __call__(self, x: int) -> int:
            return -x

    class Partial(functools.partial[Any]):
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return 42  # what runs: not borrowed

    genuine = describe(borrowed).identity.implementation_id
    assert describe(Impostor()).identity.implementation_id != genuine
    assert describe(Partial(borrowed)).identity.implementation_id != genuine


# --------------------------------------------------- ids that follow the code that runs

CLASS_V1 = """
from dataclasses import dataclass

@dataclass
class Impl:
    scale: int = 1

    def run_case(self, case):
        return 1
"""


def test_the_id_of_a_class_covers_the_run_case_it_calls() -> None:
    first = describe(_defined(CLASS_V1, "Impl")).identity.implementation_id
    edited = describe(_defined(CLASS_V1.replace("return 1", "return 2"), "Impl"))
    assert edited.identity.implementation_id != first


INSTANCE_V1 = """
class Impl:
    def __call__(self, x):
        return x

    def run_case(self, case):
        return 1

impl = Impl()
"""


def test_the_id_of_an_instance_covers_its_run_case_not_only_its_call() -> None:
    first = describe(_defined(INSTANCE_V1, "impl")).identity.implementation_id
    edited = describe(_defined(INSTANCE_V1.replace("return 1", "return 2"), "impl"))
    assert edited.identity.implementation_id != first


FUNCTION_V1 = """
def f(x):
    return x

f.run_case = lambda case: 1
"""


def test_the_id_of_a_function_covers_a_run_case_it_carries() -> None:
    first = describe(_defined(FUNCTION_V1, "f")).identity.implementation_id
    edited = describe(_defined(FUNCTION_V1.replace(": 1", ": 2"), "f"))
    assert edited.identity.implementation_id != first


def test_a_run_case_decided_at_run_time_makes_the_id_a_one_off() -> None:
    class Dynamic:
        def __call__(self, x: int) -> int:
            return x

        def __getattr__(self, name: str) -> Any:
            return lambda case: 1

    described = describe(Dynamic())
    assert not described.identity.known
    assert describe(Dynamic()).identity.implementation_id != described.identity.implementation_id


# ----------------------------------------------------------------------- printable names


def test_a_callables_names_reach_no_surface_as_control_characters() -> None:
    def f(x: int) -> int:
        return x

    f.__module__ = "\x1b]0;owned\x07mod"
    f.__qualname__ = "q\x1b[2J\nname\u202e"
    described = describe(f)
    for text in (described.name, described.identity.implementation_id, described.note):
        assert not any(ord(c) < 32 or c == "\u202e" for c in text), repr(text)
    assert "\\x1b" in described.name


# ------------------------------------------------------- restarts that hang on start

# Starts 1, 4, 7, … answer; every other start hangs (never answers start). Every case
# crashes the harness. Each case after the first would cost two start timeouts.
SLOW_STARTS = """\
n=$(cat "$0.count" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$0.count"
if [ "$n" -gt 1 ] && [ $((n % 3)) -ne 1 ]; then exec sleep 30; fi
read -r line
echo '{"op": "started", "protocol": 1, "implementation": {"name": "h", "version": "1"}}'
read -r line
exit 3
"""


def test_restarts_that_hang_on_start_cost_the_run_a_few_start_timeouts_in_all(
    module: Module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "START_TIMEOUT_MIN", 0.25)
    script = tmp_path / "slow-starts.sh"
    script.write_text(SLOW_STARTS, encoding="utf-8")
    module.suite(numbered_suite(8))
    began = time.monotonic()
    run = module.run(f"sh {script}", kind="command", timeout=0.25, sandbox="off")
    took = time.monotonic() - began
    reasons = [r.reason or "" for r in run.results]
    assert all(r.status is Status.ERRORED for r in run.results), reasons
    # Failed starts may take START_ATTEMPTS start timeouts of the run, not two per case.
    assert took < restarts.START_ATTEMPTS * 0.25 + 1.0, (took, reasons)
    assert "exited with status 3 while running this case" in reasons[0]
    assert reasons[-1].startswith("not run: the harness could not be restarted"), reasons
    assert "did not answer start within 0.25 s" in reasons[-1]
    (note,) = [note for note in run.notes if "started again" in note]
    assert note.endswith("then it could not be started again, and the cases left were not run")


# Imports 1, 4, 7, … load; every other import hangs past the load timeout. Every case
# crashes its worker. Each case after the first would cost two load timeouts.
SLOW_IMPORTS = """
import os, time

COUNT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "imports")
with open(COUNT, "a") as handle:
    handle.write("x")
with open(COUNT) as handle:
    n = len(handle.read())
if n > 1 and n % 3 != 1:
    time.sleep(30)

def f(n):
    os._exit(9)
"""


def test_restarted_workers_that_hang_on_import_cost_a_few_load_timeouts_in_all(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    # About 2.5 s: every restart starts an interpreter, and the hanging imports must
    # each be waited for up to the (shortened) load timeout.
    monkeypatch.setattr(pool, "LOAD_TIMEOUT_MIN", 0.5)
    module.suite(numbered_suite(4))
    run = module.run(f"{module.impl(SLOW_IMPORTS)}:f", isolation="none", sandbox="off", timeout=0.5)
    imports = len((module.root / "imports").read_text())
    reasons = [r.reason or "" for r in run.results]
    assert all(r.status is Status.ERRORED for r in run.results), reasons
    # The failed loads may take START_ATTEMPTS load timeouts of the run, not two per case.
    assert imports <= 1 + 2 * restarts.START_ATTEMPTS, (imports, reasons)
    assert reasons[-1].startswith("not run"), reasons
    assert any("were not tried again" in note for note in run.notes), run.notes
    (note,) = [note for note in run.notes if "started again" in note]
    assert "every case after a lost one still got its own try" not in note


# --------------------------------------------------------------- per-case refusals

# Refuses every case, in words of its own each time (its process id).
REFUSES_IN_NEW_WORDS = """\
read -r line
printf '{"op": "refused", "protocol": 2, "reason": "refusal %s"}\\n' "$$"
"""


def test_refusals_in_new_words_each_time_make_one_note_not_one_per_case(
    module: Module, tmp_path: Path
) -> None:
    script = tmp_path / "refuses.sh"
    script.write_text(REFUSES_IN_NEW_WORDS, encoding="utf-8")
    module.suite(numbered_suite(5))
    run = module.run(f"sh {script}", kind="command-per-case", sandbox="off")
    reasons = [r.reason or "" for r in run.results]
    assert all(r.status is Status.ERRORED for r in run.results), reasons
    assert all(why.startswith("not run: the command refused protocol version") for why in reasons)
    refusals = [note for note in run.notes if "refused" in note]
    assert len(refusals) == 1, run.notes
    assert refusals[0].endswith("5 cases were refused, so not run")


# ------------------------------------------------ a restarted harness that is another

# Declares its version as the number of its start; crashes on the first case.
NEW_VERSION_EACH_START = """\
n=$(cat "$0.count" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$0.count"
read -r line
printf '{"op": "started", "protocol": 1, "implementation": {"name": "h", "version": "%s"}}\\n' "$n"
while read -r line; do
  [ "$n" -eq 1 ] && exit 3
  seq=$(printf '%s' "$line" | sed 's/.*"seq": *\\([0-9]*\\).*/\\1/')
  printf '{"op": "result", "seq": %s, "observation": {"type": "integer", "value": "1"}}\\n' "$seq"
done
"""


def test_a_restarted_harness_that_declares_other_code_makes_the_id_a_one_off(
    module: Module, tmp_path: Path
) -> None:
    script = tmp_path / "versions.sh"
    script.write_text(NEW_VERSION_EACH_START, encoding="utf-8")
    module.suite(numbered_suite(2))
    run = module.run(f"sh {script}", kind="command", sandbox="off")
    assert [r.status for r in run.results] == [Status.ERRORED, Status.FAIL], [
        r.reason for r in run.results
    ]
    assert "@unknown-" in run.implementation_id, run.implementation_id
    assert any("restarted harness declared itself 'h' version '2'" in n for n in run.notes)


def test_a_callable_given_as_impl_that_claims_to_be_a_string_is_run_as_a_callable(
    module: Module,
) -> None:
    ran: list[str] = []

    class PosesAsText:
        @property  # type: ignore[misc]
        def __class__(self) -> type:
            ran.append("__class__")
            return str

        def __bool__(self) -> bool:
            ran.append("__bool__")
            return True

        def __call__(self, n: int) -> int:
            return n

    path = module.suite(numbered_suite(1))
    result = run_suite(load_suite(path), RunOptions(impl=PosesAsText(), timeout=5.0))  # type: ignore[arg-type]
    assert [r.status for r in result.results] == [Status.PASS], result.results
    assert result.implementation.endswith("PosesAsText instance")
    assert ran == []


def test_a_callable_whose_files_are_too_much_to_read_gets_a_one_off_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def f(x: int) -> int:
        return x

    monkeypatch.setattr(provided, "Budget", lambda: identity.Budget(size=16))
    described = describe(f)
    assert "@unverified-" in described.identity.implementation_id
    assert not described.identity.known
    assert "could not verify its identity" in described.note


def test_a_callable_whose_code_is_swapped_during_the_run_gets_a_one_off_id(
    module: Module,
) -> None:
    def impl(n: int) -> int:
        os._exit(9)  # ends the worker: the next case runs on a worker forked anew

    def other(n: int) -> int:
        return n

    def swap(event: object) -> None:
        if isinstance(event, CaseFinished):  # in the calling process, mid-run
            impl.__code__ = other.__code__

    path = module.suite(numbered_suite(2))
    options = RunOptions(implementation=impl, isolation="none", timeout=5.0)
    named = describe(impl).identity.implementation_id
    result = run_suite(load_suite(path), options, on_event=swap)
    assert [r.status for r in result.results] == [Status.ERRORED, Status.PASS]
    assert result.implementation_id != named
    assert "@unknown-" in result.implementation_id
    assert any("changed during the run" in note for note in result.notes), result.notes


# ------------------------------------------------ memory bounds and a forked worker

CRASH_SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "crash"
category = "functional"
input = { n = 1 }
expect = { crashed = true }
"""


def test_a_callable_out_of_memory_under_max_memory_is_no_verified_crash(
    module: Module,
) -> None:
    # The forked worker's address space holds the caller's memory, which --max-memory
    # counts too: running out of it says nothing of the implementation (about 1 s).
    def hog(n: int) -> int:
        held = bytearray(1 << 30)  # never fits in the limit below
        return n + len(held)

    path = module.suite(CRASH_SUITE)
    options = RunOptions(implementation=hog, max_memory=512, timeout=5.0)
    (result,) = run_suite(load_suite(path), options).results
    assert result.status is Status.ERRORED, result.reason
    assert (result.reason or "").startswith("could not verify crashed"), result.reason


def test_a_callables_worker_failing_on_its_own_ends_as_a_worker_does_not_as_a_crash(
    module: Module,
) -> None:
    # The case closes the worker's channel: the worker's own code then fails, and it
    # ends as `python -m cer.worker` would (status 1), not with the status a worker of
    # one case ends with after its case crashed (70).
    def closes_the_channel(n: int) -> int:
        os.closerange(3, 1000)
        return n

    path = module.suite(numbered_suite(1))
    options = RunOptions(implementation=closes_the_channel, isolation="none", timeout=5.0)
    (result,) = run_suite(load_suite(path), options).results
    assert result.status is Status.ERRORED
    assert "exited with status 1" in (result.reason or ""), result.reason


SLOTTED_V1 = """
class Impl:
    __slots__ = ("run_case",)

    def __call__(self, x):
        return x

impl = Impl()
impl.run_case = lambda case: 1
"""


def test_the_id_of_an_instance_covers_a_run_case_held_in_a_slot() -> None:
    first = describe(_defined(SLOTTED_V1, "impl")).identity.implementation_id
    edited = describe(_defined(SLOTTED_V1.replace(": 1", ": 2"), "impl"))
    assert edited.identity.implementation_id != first


def test_a_class_with_an_endless_method_order_cannot_stall_describing_it() -> None:
    class Endless(type):
        def mro(cls) -> list[type]:
            return [cls, *([object] * 100_000)]

    class Impl(metaclass=Endless):
        def __call__(self, x: int) -> int:
            return x

    def call(self: Any, x: int) -> int:
        return x

    crowded = type("Crowded", (), {f"a{n}": n for n in range(30_000)} | {"__call__": call})
    began = time.monotonic()
    described, again, full = describe(Impl()), describe(Impl), describe(crowded())
    assert time.monotonic() - began < 1.0
    assert not described.identity.known and not again.identity.known
    assert not full.identity.known

"""The engine's musts and must-nots, each with a test that fails if it broke."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cer.engine.options import RunCancelled, RunOptions
from cer.engine.runner import run_suite
from cer.events import CaseFinished, ImplementationFailed, ImplementationLoaded, RunStarted
from cer.model import Status
from cer.suite.loader import load_suite
from cer.suite.selection import Selection
from support import Module, single_case_suite, statuses

THREE_CASES = """
commonsformat_evals = "0.2"
target = "demo"

[[adversarial]]
name = "a-first"
category = "input-validation"
input = { x = 1 }
expect = { output = 2 }

[[cases]]
name = "c-second"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "c-third"
category = "functional"
input = { x = 3 }
expect = { output = 6 }
"""

DOUBLE = "def f(x):\n    return x * 2\n"


@pytest.fixture(params=["fork", "none"])
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def one(module: Module, expect: str, source: str, input_: str = "{}", **options: object) -> Status:
    module.suite(single_case_suite(expect, input_))
    run = module.run(f"{module.impl(source)}:f", **options)
    assert len(run.results) == 1
    return run.results[0].status


# --- truthful comparison --------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "returned"),
    [
        ("{ output = 1 }", "True"),
        ("{ output = 1 }", "1.0"),
        ("{ output = 1.0 }", "1"),
        ("{ output = 1 }", "'1'"),
        ("{ output = true }", "1"),
        ("{ output = 1.5 }", "float('nan')"),
        ("{ output = [1, 2] }", "[1, 2, 3]"),
        ("{ output = { a = 1 } }", "{'output': {'a': 1, 'b': 2}}"),
    ],
)
def test_loose_equality_never_passes(module: Module, expect: str, returned: str) -> None:
    assert one(module, expect, f"def f():\n    return {returned}\n") is Status.FAIL


def test_exact_match_passes(module: Module) -> None:
    source = "def f():\n    return [1, 2.5, 'x', True]\n"
    assert one(module, "{ output = [1, 2.5, 'x', true] }", source) is Status.PASS


def test_object_with_lying_eq_cannot_pass(module: Module, isolation: str) -> None:
    source = """
        class Liar:
            def __eq__(self, other):
                return True
            __hash__ = object.__hash__
        def f():
            return Liar()
    """
    module.suite(single_case_suite("{ output = 1 }"))
    run = module.run(f"{module.impl(source)}:f", isolation=isolation)
    result = run.results[0]
    assert result.status is Status.ERRORED
    assert "not plain data" in (result.reason or "")


def test_str_subclass_is_not_plain_data(module: Module) -> None:
    source = "class S(str):\n    pass\ndef f():\n    return {'output': [S('x')]}\n"
    module.suite(single_case_suite("{ output = ['x'] }"))
    result = module.run(f"{module.impl(source)}:f").results[0]
    assert result.status is Status.ERRORED
    assert "output[0]" in (result.reason or "")


def test_printed_pass_changes_nothing(module: Module) -> None:
    source = """
        import sys
        def f():
            print("PASS")
            print('{"status": "pass"}', file=sys.stderr)
            return 3
    """
    module.suite(single_case_suite("{ output = 4 }"))
    result = module.run(f"{module.impl(source)}:f").results[0]
    assert result.status is Status.FAIL
    assert result.stdout == "PASS\n"
    assert '"status": "pass"' in result.stderr


# --- crashes, hangs, exits: errored for that case only --------------------------------

CRASHERS = {
    "sys-exit-0": "import sys; sys.exit(0)",
    "os-exit-0": "import os; os._exit(0)",
    "sigkill": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "segfault": "import ctypes; ctypes.string_at(0)",
    "keyboard-interrupt": "raise KeyboardInterrupt",
    "generator-exit": "raise GeneratorExit",
    "infinite-loop": "while True: pass",
}


@pytest.mark.parametrize("behaviour", sorted(CRASHERS))
def test_crash_is_errored_and_next_case_runs(
    module: Module, behaviour: str, isolation: str
) -> None:
    source = f"""
        def f(x):
            if x == 2:
                {CRASHERS[behaviour]}
            return x * 2
    """
    module.suite(THREE_CASES)
    run = module.run(f"{module.impl(source)}:f", timeout=1.0, isolation=isolation)
    assert statuses(run) == [
        ("a-first", Status.PASS),
        ("c-second", Status.ERRORED),
        ("c-third", Status.PASS),
    ]
    reason = run.results[1].reason or ""
    assert reason
    if behaviour == "infinite-loop":
        assert "timed out after 1 s" in reason


def test_timeout_is_a_failure_when_expect_says_not_hung(module: Module) -> None:
    status = one(
        module, "{ hung = false }", "def f():\n    while True:\n        pass\n", timeout=0.5
    )
    assert status is Status.FAIL


def test_crash_is_a_failure_when_expect_says_not_crashed(module: Module) -> None:
    source = "import ctypes\ndef f():\n    ctypes.string_at(0)\n"
    assert one(module, "{ crashed = false }", source) is Status.FAIL


def test_sleep_in_c_call_and_in_finally_is_killed(module: Module) -> None:
    source = """
        import signal, time
        def f():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                time.sleep(30)
            finally:
                time.sleep(30)
    """
    module.suite(single_case_suite("{ output = 1 }"))
    run = module.run(f"{module.impl(source)}:f", timeout=0.5)
    assert run.results[0].status is Status.ERRORED
    assert "timed out" in (run.results[0].reason or "")
    assert run.completed_at_ms - run.started_at_ms < 10_000


def test_exception_in_thread_is_errored(module: Module) -> None:
    source = """
        import threading
        def f():
            t = threading.Thread(target=lambda: 1 / 0)
            t.start(); t.join()
            return 1
    """
    module.suite(single_case_suite("{ output = 1 }"))
    result = module.run(f"{module.impl(source)}:f").results[0]
    assert result.status is Status.ERRORED
    assert "thread" in (result.reason or "")
    assert "ZeroDivisionError" in (result.traceback or "")


def test_memory_limit_is_errored(module: Module) -> None:
    source = "def f():\n    return len(bytearray(2 * 1024 ** 3))\n"
    module.suite(single_case_suite("{ output = 1 }"))
    result = module.run(f"{module.impl(source)}:f", max_memory=512 * 1024 * 1024).results[0]
    assert result.status is Status.ERRORED
    assert "memory" in (result.reason or "")


# --- exceptions and rejections --------------------------------------------------------


def test_exception_without_rejection_expectation_is_errored(module: Module) -> None:
    module.suite(single_case_suite("{ output = 1 }"))
    name = module.impl('def f():\n    raise ValueError("boom")\n')
    result = module.run(f"{name}:f").results[0]
    assert result.status is Status.ERRORED
    assert "ValueError: boom" in (result.reason or "")
    assert "Traceback" in (result.traceback or "")


@pytest.mark.parametrize(
    ("expect", "wanted"),
    [
        ('{ rejects = true, error_includes = "empty" }', Status.PASS),
        ('{ rejects = true, error_includes = "full" }', Status.FAIL),
        ('{ error_type = "ValueError" }', Status.PASS),
        ('{ error_type = "TypeError" }', Status.FAIL),
        ("{ rejects = false }", Status.FAIL),
        ("{ crashed = false }", Status.PASS),
    ],
)
def test_rejection_is_compared(module: Module, expect: str, wanted: Status) -> None:
    source = "def f():\n    raise ValueError('empty array')\n"
    assert one(module, expect, source) is wanted


def test_rejects_true_fails_when_nothing_raised(module: Module) -> None:
    assert one(module, "{ rejects = true }", "def f():\n    return 1\n") is Status.FAIL


# --- isolation: no state across cases -------------------------------------------------


def test_mutated_input_and_module_state_do_not_leak(module: Module) -> None:
    source = """
        SEEN = []
        def f(items):
            SEEN.append(1)
            items.append("leak")
            return {"output": len(items), "seen": len(SEEN)}
    """
    module.suite("""
        commonsformat_evals = "0.2"
        [[cases]]
        name = "one"
        category = "functional"
        input = { items = ["a"] }
        expect = { output = 2, seen = 1 }
        [[cases]]
        name = "two"
        category = "functional"
        input = { items = ["a"] }
        expect = { output = 2, seen = 1 }
    """)
    run = module.run(f"{module.impl(source)}:f")
    assert statuses(run) == [("one", Status.PASS), ("two", Status.PASS)]


def test_input_mutation_does_not_leak_without_isolation(module: Module) -> None:
    source = "def f(items):\n    items.append('x')\n    return len(items)\n"
    module.suite("""
        commonsformat_evals = "0.2"
        [[cases]]
        name = "one"
        category = "functional"
        input = { items = [] }
        expect = { output = 1 }
        [[cases]]
        name = "two"
        category = "functional"
        input = { items = [] }
        expect = { output = 1 }
    """)
    run = module.run(f"{module.impl(source)}:f", isolation="none")
    assert [r.status for r in run.results] == [Status.PASS, Status.PASS]


def test_class_is_instantiated_once_per_case(module: Module) -> None:
    source = """
        class Impl:
            def __init__(self):
                self.calls = 0
            def __call__(self, x):
                self.calls += 1
                return self.calls
    """
    module.suite(
        THREE_CASES.replace("expect = { output = 2 }", "expect = { output = 1 }")
        .replace("expect = { output = 4 }", "expect = { output = 1 }")
        .replace("expect = { output = 6 }", "expect = { output = 1 }")
    )
    run = module.run(f"{module.impl(source)}:Impl", isolation="none")
    assert [r.status for r in run.results] == [Status.PASS] * 3


def test_run_case_receives_a_view_without_expect(module: Module) -> None:
    source = """
        class Adapter:
            def run_case(self, case):
                assert not hasattr(case, "expect")
                return {"name": case.name, "cls": case.case_class, "x": case.input["x"],
                        "tags": list(case.tags)}
        adapter = Adapter()
    """
    module.suite("""
        commonsformat_evals = "0.2"
        [[adversarial]]
        name = "viewed"
        category = "input-validation"
        tags = ["t:1"]
        input = { x = 5 }
        expect = { name = "viewed", cls = "adversarial", x = 5, tags = ["t:1"] }
    """)
    assert module.run(f"{module.impl(source)}:adapter").results[0].status is Status.PASS


def test_expected_values_never_reach_the_implementation(module: Module) -> None:
    source = """
        import gc
        def f(x):
            secret = "SECRET-EXPECTATION"
            found = any(isinstance(o, dict) and secret in map(str, o.values())
                        for o in gc.get_objects())
            return {"output": found}
    """
    module.suite(
        single_case_suite('{ output = false, marker = "SECRET-EXPECTATION" }', "{ x = 1 }")
    )
    result = module.run(f"{module.impl(source)}:f").results[0]
    assert result.observation is not None
    assert result.observation["output"] is False


# --- calling conventions and binding --------------------------------------------------


def test_keyword_and_positional_calling(module: Module) -> None:
    kw = "def f(a, b):\n    return a - b\n"
    assert one(module, "{ output = 1 }", kw, "{ a = 3, b = 2 }") is Status.PASS
    positional = "def f(data):\n    return data['a'] - data['b']\n"
    assert one(module, "{ output = 1 }", positional, "{ a = 3, b = 2 }") is Status.PASS


def test_non_mapping_return_binds_to_single_expect_key(module: Module) -> None:
    source = "def f(markdown):\n    return '<p>' + markdown + '</p>\\n'\n"
    status = one(
        module, '{ html = "<p>hi</p>\\n", elapsed_ms_max = 5000 }', source, '{ markdown = "hi" }'
    )
    assert status is Status.PASS


def test_async_implementation_is_awaited(module: Module) -> None:
    assert one(module, "{ output = 7 }", "async def f():\n    return 7\n") is Status.PASS


@pytest.mark.parametrize(
    "source",
    [
        "async def g():\n    return 1\ndef f():\n    return g()\n",
        "def f():\n    yield 1\n",
        "def f():\n    x = []\n    x.append(x)\n    return x\n",
    ],
)
def test_coroutines_generators_and_cycles_are_errored(module: Module, source: str) -> None:
    assert one(module, "{ output = 1 }", source) is Status.ERRORED


def test_run_case_object_with_hostile_bool(module: Module) -> None:
    source = """
        class Bad:
            def __bool__(self):
                raise RuntimeError("no")
        def f():
            return Bad()
    """
    assert one(module, "{ output = true }", source) is Status.ERRORED


# --- reporting: every case, declared order, skips explicit ---------------------------


def test_results_in_declared_order_with_every_case(module: Module, isolation: str) -> None:
    module.suite(THREE_CASES)
    run = module.run(f"{module.impl(DOUBLE)}:f", isolation=isolation)
    assert [r.case_name for r in run.results] == ["a-first", "c-second", "c-third"]
    assert [r.position for r in run.results] == [1, 2, 3]
    assert run.summary.total == run.summary.passed == 3


def test_cases_named_first_run_first_and_results_keep_declared_order(
    module: Module, isolation: str
) -> None:
    module.suite(THREE_CASES)
    events: list[object] = []
    run = run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(
            impl=f"{module.impl(DOUBLE)}:f",
            isolation=isolation,
            first=frozenset({"c-third"}),
        ),
        on_event=events.append,
    )
    finished = [e.result.case_name for e in events if isinstance(e, CaseFinished)]
    assert finished == ["c-third", "a-first", "c-second"]
    assert [r.case_name for r in run.results] == ["a-first", "c-second", "c-third"]
    assert run.summary.passed == 3


def test_unknown_category_is_skipped_not_passed(module: Module) -> None:
    module.suite(THREE_CASES.replace('"input-validation"', '"concurrency"'))
    run = module.run(f"{module.impl(DOUBLE)}:f")
    first = run.results[0]
    assert first.status is Status.SKIPPED
    assert first.reason == "category not supported: concurrency"
    assert run.summary.skipped == 1
    assert run.summary.verdict == "incomplete"


def test_category_mapped_by_configuration_runs(module: Module) -> None:
    module.suite(THREE_CASES.replace('"input-validation"', '"concurrency"'))
    run = module.run(f"{module.impl(DOUBLE)}:f", category_models={"concurrency": "functional"})
    assert run.results[0].status is Status.PASS


def test_deselected_cases_are_reported_skipped(module: Module) -> None:
    module.suite(THREE_CASES)
    run = module.run(f"{module.impl(DOUBLE)}:f", selection=Selection(case_globs=("c-*",)))
    assert statuses(run) == [
        ("a-first", Status.SKIPPED),
        ("c-second", Status.PASS),
        ("c-third", Status.PASS),
    ]
    assert run.results[0].reason == "deselected"


def test_empty_expect_is_never_a_pass(module: Module) -> None:
    assert one(module, "{}", "def f():\n    return 1\n") is Status.ERRORED


def test_missing_fixture_errors_that_case_only(module: Module) -> None:
    (module.root / "fixtures").mkdir()
    (module.root / "fixtures" / "here.txt").write_text("abc")
    module.suite("""
        commonsformat_evals = "0.2"
        [[cases]]
        name = "present"
        category = "functional"
        input = { path = "fixture://here.txt" }
        expect = { output = "abc" }
        [[cases]]
        name = "absent"
        category = "functional"
        input = { path = "fixture://gone.txt" }
        expect = { output = "abc" }
    """)
    source = "def f(path):\n    return open(path).read()\n"
    run = module.run(f"{module.impl(source)}:f")
    assert statuses(run) == [("present", Status.PASS), ("absent", Status.ERRORED)]
    assert "gone.txt" in (run.results[1].reason or "")


def test_import_failure_errors_every_case_and_completes(module: Module) -> None:
    module.suite(THREE_CASES)
    name = module.impl("print('loading')\nraise RuntimeError('cannot start')\n")
    events: list[object] = []
    run = run_suite(
        load_suite(module.root / "evals.toml"), RunOptions(impl=f"{name}:f"), on_event=events.append
    )
    assert [r.status for r in run.results] == [Status.ERRORED] * 3
    assert "cannot start" in (run.results[0].reason or "")
    assert "RuntimeError" in (run.results[0].traceback or "")
    assert "loading" in run.results[0].stdout
    assert run.notes
    assert any(isinstance(e, ImplementationFailed) for e in events)


def test_missing_attribute_is_an_import_failure(module: Module) -> None:
    module.suite(THREE_CASES)
    run = module.run(f"{module.impl(DOUBLE)}:nope")
    assert {r.status for r in run.results} == {Status.ERRORED}
    assert "nope" in (run.results[0].reason or "")


def test_events_stream_in_order(module: Module) -> None:
    module.suite(THREE_CASES)
    events: list[object] = []
    run_suite(
        load_suite(module.root / "evals.toml"),
        RunOptions(impl=f"{module.impl(DOUBLE)}:f"),
        on_event=events.append,
    )
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[1], ImplementationLoaded)
    finished = [e for e in events if isinstance(e, CaseFinished)]
    assert [e.done for e in finished] == [1, 2, 3]


def test_implementation_id_follows_the_source(module: Module) -> None:
    module.suite(THREE_CASES)
    name = module.impl(DOUBLE, name="impl_fixed")
    first = module.run(f"{name}:f").implementation_id
    assert first.startswith("impl_fixed:f@")
    module.impl(DOUBLE + "# changed\n", name="impl_fixed")
    assert module.run(f"{name}:f").implementation_id != first


def test_captured_output_is_bounded(module: Module) -> None:
    source = "import sys\ndef f():\n    sys.stdout.write('x' * 100_000)\n    return 1\n"
    module.suite(single_case_suite("{ output = 1 }"))
    result = module.run(f"{module.impl(source)}:f", capture_limit=1000).results[0]
    assert result.status is Status.PASS
    assert result.stdout.startswith("x" * 1000)
    assert "truncated: 99000 more bytes" in result.stdout


def test_cancel_stops_the_run(module: Module, tmp_path: Path) -> None:
    module.suite(THREE_CASES)
    source = "import time\ndef f(x):\n    time.sleep(5)\n    return x * 2\n"
    cancel = threading.Event()

    def cancel_soon(event: object) -> None:
        if isinstance(event, ImplementationLoaded):
            threading.Timer(0.2, cancel.set).start()

    with pytest.raises(RunCancelled):
        run_suite(
            load_suite(module.root / "evals.toml"),
            RunOptions(impl=f"{module.impl(source)}:f"),
            on_event=cancel_soon,
            cancel=cancel,
        )


def test_anomaly_without_isolation_recycles_the_worker(module: Module) -> None:
    source = """
        import os
        def f(x):
            if x == 1:
                os.environ["LEAKED"] = "yes"
            return {"output": x * 2, "leaked": os.environ.get("LEAKED", "no")}
    """
    module.suite(
        THREE_CASES.replace("expect = { output = 4 }", 'expect = { output = 4, leaked = "no" }')
    )
    run = module.run(f"{module.impl(source)}:f", isolation="none")
    assert [r.status for r in run.results] == [Status.PASS] * 3
    assert "recycled" in run.results[0].stderr


# --- what the runner saw wins over what the implementation claims --------------------


@pytest.mark.parametrize(
    ("expect", "returned", "status"),
    [
        ("{ rejects = true }", "{'rejects': True}", Status.ERRORED),
        ("{ crashed = true }", "{'crashed': True}", Status.ERRORED),
        ("{ hung = true }", "{'hung': True}", Status.ERRORED),
        (
            "{ elapsed_ms_max = 1 }",
            "(__import__('time').sleep(0.05), {'elapsed_ms': 0})[1]",
            Status.ERRORED,
        ),
        ("{ has_fields = ['rejects'] }", "{'x': 1}", Status.FAIL),
    ],
)
def test_implementation_cannot_claim_runner_observations(
    module: Module, expect: str, returned: str, status: Status
) -> None:
    assert one(module, expect, f"def f():\n    return {returned}\n") is status


def test_failing_constructor_is_never_a_rejection(module: Module) -> None:
    source = "class Impl:\n    def __init__(self, required):\n        pass\n"
    module.suite(single_case_suite("{ rejects = true }"))
    result = module.run(f"{module.impl(source)}:Impl").results[0]
    assert result.status is Status.ERRORED
    assert "could not be set up" in (result.reason or "")


def test_expecting_an_error_message_makes_a_raise_comparable(module: Module) -> None:
    source = "def f():\n    raise ValueError('empty')\n"
    assert one(module, '{ error = "empty" }', source) is Status.PASS


def test_huge_integers_cross_intact(module: Module) -> None:
    source = "def f():\n    return {'output': 1, 'big': 10 ** 20000 + 1}\n"
    module.suite(single_case_suite("{ output = 1 }"))
    result = module.run(f"{module.impl(source)}:f").results[0]
    assert result.status is Status.PASS
    assert result.observation is not None
    assert result.observation["big"] == 10**20000 + 1


def test_output_printed_before_a_hang_is_kept(module: Module) -> None:
    source = "def f():\n    print('got this far')\n    while True:\n        pass\n"
    module.suite(single_case_suite("{ output = 1 }"))
    result = module.run(f"{module.impl(source)}:f", timeout=0.5).results[0]
    assert result.status is Status.ERRORED
    assert "got this far" in result.stdout

"""A timed-out case shows where it hung: the worker asks the case's process for its
stack (faulthandler) just before the kill, and keeps it apart from its stderr."""

from __future__ import annotations

import time

from cer.model import Status
from cer.text.tracebacks import STACK_HEADING, implementation_site
from support import Module, single_case_suite


def test_the_stack_names_the_line_of_the_loop_and_stderr_stays_apart(module: Module) -> None:
    module.suite(single_case_suite("{ output = 1 }"))
    name = module.impl(
        """
        import sys

        def f(**_):
            print("before the loop", file=sys.stderr, flush=True)
            n = 0
            while True:
                n += 1
        """
    )
    (result,) = module.run(f"{name}:f", timeout=0.5).results
    assert result.status is Status.ERRORED and result.reason == "timed out after 0.5 s"
    assert result.stderr.strip() == "before the loop"
    assert result.traceback is not None and result.traceback.startswith(STACK_HEADING)
    site = implementation_site(result)
    assert site is not None and site.path == str(module.root / f"{name}.py")
    assert site.function == "f" and site.line in (6, 7, 8)


def test_a_case_that_blocks_the_signal_still_times_out_promptly(module: Module) -> None:
    module.suite(single_case_suite("{ output = 1 }"))
    name = module.impl(
        """
        import signal

        def f(**_):
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
            while True:
                pass
        """
    )
    started = time.monotonic()
    (result,) = module.run(f"{name}:f", timeout=0.5).results
    assert time.monotonic() - started < 5
    assert result.status is Status.ERRORED and result.reason == "timed out after 0.5 s"
    assert result.traceback is None


def test_a_case_that_expects_a_hang_passes_and_keeps_its_stack(module: Module) -> None:
    module.suite(single_case_suite("{ hung = true }"))
    name = module.impl(
        """
        def f(**_):
            while True:
                pass
        """
    )
    (result,) = module.run(f"{name}:f", timeout=0.5).results
    assert result.status is Status.PASS

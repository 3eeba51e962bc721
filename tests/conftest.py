"""Fixtures shared by the tests (their helpers are in support.py)."""

from __future__ import annotations

import compileall
import gc
import itertools
import os
import py_compile
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cer
from cer.engine.python.workerproc import WarmWorkers
from support import Module

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
"""No animations in the tests' apps, nor in the apps of the processes they start: a
pilot's key press waits for every animation to end, and the tab underline's slide made
each press of tab cost 0.4 s (36 s of one test's 47). What the screen ends up showing is
the same; a test that wants an animation sets the app's ``animation_level`` itself."""


def pytest_configure(config: pytest.Config) -> None:
    """Where Python is told not to write bytecode (``PYTHONDONTWRITEBYTECODE``, as some
    CI images set it), compile cer's own modules once before the tests start. The tests
    start over a thousand Python processes (cer runs, workers, pytest sessions), and
    without a cache each of them compiled every module of cer it imports anew: half the
    suite's CPU time. The caches are checked against a hash of their source, never its
    time, so an edit made while the tests run is never masked by a stale cache; modules
    the tests write into temporary folders are still never cached."""
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        compileall.compile_dir(
            Path(cer.__file__).parent,
            quiet=2,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )
    if sys.dont_write_bytecode:
        _keep_rewritten_test_modules(config)


def _keep_rewritten_test_modules(config: pytest.Config) -> None:
    """Keep pytest's rewrite of each test module (its asserts made to explain
    themselves) in the module's ``__pycache__``, also where Python is told not to write
    bytecode. pytest then neither writes nor trusts a cache of its own, and every
    session, each pytest-xdist worker's among them, rewrote all 140 test modules anew:
    3.6 s of CPU of the 6.2 s a collection took. pytest reads the kept rewrite only
    while the module's size and time are those it was made from, as it does wherever
    bytecode is written; what the rewritten modules import is still never cached. The
    plugins pytest rewrites too (another second a session) were imported before this
    file: their rewrite is kept now, for the sessions that follow."""
    from _pytest.assertion import rewrite

    needed = ("_rewrite_test", "get_cache_dir", "try_makedirs", "_write_pyc", "PYC_TAIL")
    if not all(hasattr(rewrite, name) for name in needed) or not hasattr(
        rewrite, "assertstate_key"
    ):
        return  # another pytest's internals: the tests run the same, only slower
    made = rewrite._rewrite_test

    def keep(fn: Path, config: pytest.Config, source_stat: os.stat_result, code: Any) -> None:
        cache = rewrite.get_cache_dir(fn)
        if rewrite.try_makedirs(cache):
            state = config.stash[rewrite.assertstate_key]
            rewrite._write_pyc(state, code, source_stat, cache / (fn.name[:-3] + rewrite.PYC_TAIL))

    def rewrite_and_keep(fn: Path, config: pytest.Config) -> tuple[os.stat_result, Any]:
        source_stat, code = made(fn, config)
        keep(fn, config, source_stat, code)
        return source_stat, code

    rewrite._rewrite_test = rewrite_and_keep
    hook = (
        config.stash[rewrite.assertstate_key].hook
        if rewrite.assertstate_key in config.stash
        else None
    )
    for fn in list(getattr(hook, "_rewritten_names", {}).values()):
        kept = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
        if fn.suffix == ".py" and not kept.exists():
            keep(fn, config, *made(fn, config))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules that hold a test marked slow first, each in its own order: under
    ``-n 2`` a long test that starts near the end runs alone while the other worker has
    nothing left to do; started first, the quick tests fill in around it."""

    def module(item: pytest.Item) -> str:
        return item.nodeid.split("::", 1)[0]

    slow = {module(item) for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: module(item) not in slow)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker, collect the garbage now and freeze what is left, before
    the worker reports that it has finished. pytest's own end collects five times over
    the whole heap (to find the unraisable exceptions), and on a busy machine that took
    the worker over five seconds past the controller's goodbye, after which execnet sends
    the worker a SIGINT to end it: the stray ``KeyboardInterrupt`` that the run's
    warnings showed. Frozen objects are left out of those collections; what becomes
    garbage after this point is still collected and its unraisable exceptions reported."""
    if hasattr(session.config, "workerinput"):
        gc.collect()
        gc.freeze()


@pytest.fixture
def module(tmp_path: Path) -> Module:
    return Module(tmp_path)


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests read cer's output as it is outside GitHub Actions, wherever they run
    (under GitHub Actions cer pauses workflow commands around it: see
    tests/hostile/test_workflow_commands.py)."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture(scope="session")
def _outputs_records(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A new path for each test's record of outputs, all in one folder made once: a
    numbered folder made for every test cost a scan of all the folders made before it
    (over a second per thousand tests, growing with their number). cer makes the
    record's folder when it first writes one."""
    base = tmp_path_factory.mktemp("state")
    return (base / str(index) / "outputs" for index in itertools.count())


@pytest.fixture(autouse=True)
def _own_outputs_record(monkeypatch: pytest.MonkeyPatch, _outputs_records: Iterator[Path]) -> None:
    """Each test keeps its own record of the files cer wrote (cer.sandbox.readset), not the
    user's."""
    monkeypatch.setenv("CER_OUTPUTS_RECORD", str(next(_outputs_records)))


@pytest.fixture(autouse=True)
def _warm_workers_end_with_the_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The worker processes a test's apps started ahead (cer-tui's warm workers) end
    with the test, reaped and their files closed, also when the app never ran (a test
    of main()'s arguments, of create_app's checks): they are otherwise left to the
    garbage collector, which warns of them under whichever test it runs in."""
    made: list[WarmWorkers] = []
    original = WarmWorkers.__init__

    def remember(self: WarmWorkers, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(WarmWorkers, "__init__", remember)
    yield
    for warm in made:
        warm.close()

"""Helpers the tests share: build a module folder (suite + implementation) in a temporary
directory, and read a run back. Imported by the tests; conftest.py only holds fixtures."""

from __future__ import annotations

import gc
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
NO_TEST_PLUGINS = tuple(
    arg
    for name in ("textual-snapshot", "syrupy", "anyio", "hypothesispytest")
    for arg in ("-p", f"no:{name}")
)
"""Options for a pytest session a test starts: without the plugins this project's own
tests use (snapshots, async tests, Hypothesis), which such a session has no use for and
which import Textual, Hypothesis and more at its start, two thirds of its CPU time.
cer's plugin and pytest-xdist are still loaded through their entry points."""
EXAMPLES = ROOT / "examples"


def cer_in_process(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cer ARGS`` run in this process from ``cwd``, its exit code and what it wrote to
    standard output and standard error returned as ``subprocess.run`` would return them.
    A ``python -m cer.cli`` process costs an interpreter's start and cer's imports (a
    quarter of a second of CPU each); what a test reads from a run's streams and exit code
    is the same either way, so only the tests of the process itself (its signals, its
    console script, what it leaves behind) start one. The streams are fresh, not a
    terminal, as a captured subprocess's are; the working folder is restored after."""
    from cer.cli.main import main as cer_main  # the tests that use no CLI load none

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    saved = (sys.stdout, sys.stderr, os.getcwd())
    sys.stdout, sys.stderr = out, err
    os.chdir(cwd)
    try:
        try:
            code = cer_main(list(args))
        except SystemExit as exit_:  # argparse's --help and its usage errors
            code = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved[0], saved[1]
        os.chdir(saved[2])
    stdout = out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    stderr = err.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["cer", *args], code, stdout, stderr)


def pytest_in_process(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``pytest ARGS`` run in this process from ``cwd`` as a user's session, its exit code
    and what it wrote returned as ``subprocess.run`` would return them. A ``python -m
    pytest`` process costs an interpreter, pytest's and cer's imports (half a second of
    CPU, more than the cer run inside it); what a test reads from a session's report and
    exit code is the same either way, so only the tests of the process itself (xdist's
    workers, the plugin's entry point, an untrusted conftest that patches cer) start
    one. As in the process the tests start: this session's ``PYTEST_*`` variables are
    hidden, there is no colour, and the test plugins this project uses stay out; the
    working folder, the variables and the modules the session imported (its test files,
    its conftests) are put back after, so that no two sessions share a module. What this
    process holds is frozen for the session's garbage collector: pytest collects five
    times at a session's end, and over the heap of a process that ran the terminal UI's
    tests each session cost over a second of CPU; it is unfrozen (and collected as ever)
    after."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    saved_streams = (sys.stdout, sys.stderr)
    saved_cwd, saved_path = os.getcwd(), list(sys.path)
    saved_env = dict(os.environ)
    modules = set(sys.modules)
    for name in [name for name in os.environ if name.startswith(("PYTEST_", "COV_"))]:
        del os.environ[name]
    os.environ["NO_COLOR"] = "1"
    sys.stdout, sys.stderr = out, err
    os.chdir(cwd)
    gc.freeze()
    try:
        code = int(pytest.main([*NO_TEST_PLUGINS, *args]))
    finally:
        gc.unfreeze()
        out.flush()
        err.flush()
        sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        os.environ.clear()
        os.environ.update(saved_env)
        for name in set(sys.modules) - modules:
            if not _installed(getattr(sys.modules[name], "__file__", None)):
                del sys.modules[name]
    stdout = out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    stderr = err.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["pytest", *args], code, stdout, stderr)


def _installed(file: str | None) -> bool:
    """Whether a module comes from Python, what is installed beside it or cer itself:
    one that stays loaded after a session as it would after any import."""
    if file is None:
        return True
    prefixes = {sys.prefix, sys.base_prefix, str(ROOT / "src")}
    return any(file.startswith(prefix + os.sep) for prefix in prefixes)


class Module:
    """A throwaway Commons Format module: an evals.toml and implementation files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.counter = 0

    def suite(self, text: str) -> Path:
        path = self.root / "evals.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def impl(self, source: str, name: str | None = None) -> str:
        """Write an implementation module; returns its module name."""
        if name is None:
            self.counter += 1
            name = f"impl_{self.counter}"
        (self.root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return name

    def run(self, impl: str, **options: Any) -> RunResult:
        options.setdefault("timeout", 5.0)
        return run_suite(load_suite(self.root / "evals.toml"), RunOptions(impl=impl, **options))


def statuses(run: RunResult) -> list[tuple[str, Status]]:
    return [(r.case_name, r.status) for r in run.results]


def single_case_suite(expect: str, input_: str = "{}", category: str = "functional") -> str:
    """A one-case suite text with the given inline tables."""
    return (
        'commonsformat_evals = "0.2"\ntarget = "t"\n\n[[cases]]\nname = "only"\n'
        f'category = "{category}"\ninput = {input_}\nexpect = {expect}\n'
    )


def probe_suite(cases: list[tuple[str, str]], expect: str = "output = 0") -> str:
    """A suite text of target ``probe``: one case a ``(name, input fields)`` pair, each
    expecting ``expect`` (by default never met: the hostile tests check the observation)."""
    lines = ['commonsformat_evals = "0.2"', 'target = "probe"', ""]
    for name, fields in cases:
        lines += [
            "[[cases]]",
            f'name = "{name}"',
            'category = "functional"',
            f"input = {{ {fields} }}",
            f"expect = {{ {expect} }}",
            "",
        ]
    return "\n".join(lines)


def numbered_suite(count: int) -> str:
    """``count`` cases ``c1`` … ``cN``, each with input ``n`` and expecting ``n``."""
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for n in range(1, count + 1):
        parts.append(
            f'[[cases]]\nname = "c{n}"\ncategory = "functional"\n'
            f"input = {{ n = {n} }}\nexpect = {{ output = {n} }}\n"
        )
    return "\n".join(parts)


RunOne = Callable[..., RunResult]


def marked_processes(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def assert_none_left(marker: str, outlived: str) -> None:
    """Fail when a process marked ``marker`` is still alive two seconds on, killing each
    (never left to the next test); ``outlived`` names what they outlived."""
    deadline = time.monotonic() + 2.0
    while marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = marked_processes(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes of {outlived} outlived it: {left}"

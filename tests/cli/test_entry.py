"""The ``cer`` program's entry point starts the first worker of ``cer run`` before the
command line is imported (cer.cli.entry)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import support
from cer.cli.entry import early_workers, wants_early_worker
from cer.engine.options import RunOptions
from cer.engine.python.workerproc import WorkerProcess
from cer.engine.runner import run_suite
from cer.model import Status
from cer.suite.loader import load_suite
from support import Module, single_case_suite


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["run", "evals.toml", "--impl", "m:f"], True),
        (["run"], True),
        (["run", "--impl-cmd", "./harness"], False),
        (["run", "--impl-cmd-per-case", "./one"], False),
        (["run", "--help"], False),
        (["check", "evals.toml"], False),
        (["history"], False),
        ([], False),
    ],
)
def test_only_a_run_of_a_python_implementation_starts_a_worker_early(
    argv: list[str], wanted: bool
) -> None:
    assert wants_early_worker(argv) is wanted
    if not wanted:
        assert early_workers(argv) is None


def test_the_early_worker_serves_the_first_run_and_no_other_starts(module: Module) -> None:
    module.suite(single_case_suite("{ output = 2 }", "{ x = 1 }"))
    impl = module.impl("def f(x):\n    return x * 2\n")
    pool = early_workers(["run", "evals.toml", "--impl", f"{impl}:f"])
    assert pool is not None
    try:
        (waiting,) = pool.pids()
        suite = load_suite(module.root / "evals.toml")
        run = run_suite(suite, RunOptions(impl=f"{impl}:f", paths=(str(module.root),)), warm=pool)
        assert [result.status for result in run.results] == [Status.PASS]
        assert pool.pids() == frozenset()  # taken, and not replaced after the run
    finally:
        pool.close()
    assert waiting > 0


def started_as(pid: int) -> tuple[list[str], dict[str, str], str]:
    """The command line (but its two descriptor numbers), environment and working
    directory of the worker process ``pid``, once it runs its own program."""
    proc = Path(f"/proc/{pid}")
    for _ in range(2000):
        argv = (proc / "cmdline").read_bytes().split(b"\0")[:-1]
        if b"cer.worker" in argv:
            break
        time.sleep(0.005)
    environ = (proc / "environ").read_bytes().split(b"\0")[:-1]
    env = dict(entry.decode().partition("=")[::2] for entry in environ)
    return [word.decode() for word in argv[:-2]], env, os.readlink(proc / "cwd")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_the_early_worker_is_started_as_the_run_would_start_it() -> None:
    pool = early_workers(["run", "evals.toml", "--impl", "m:f"])
    assert pool is not None
    try:
        early = pool.take()
        assert early is not None and early.fresh
        late = WorkerProcess()
        try:
            assert started_as(early.process.pid) == started_as(late.process.pid)
            assert (early.started_in, early.started_with) == (late.started_in, late.started_with)
        finally:
            early.kill()
            late.kill()
    finally:
        pool.close()


def test_cer_run_through_the_entry_point(module: Module) -> None:
    module.suite(single_case_suite("{ output = 2 }", "{ x = 1 }"))
    impl = module.impl("def f(x):\n    return x * 2\n")
    program = (
        "import sys\nfrom cer.cli.entry import main\n"
        f"sys.argv = ['cer', 'run', 'evals.toml', '--impl', '{impl}:f', '--no-history']\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=module.root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "1 passed" in done.stdout


def test_the_program_is_the_entry_point() -> None:
    pyproject = (support.ROOT / "pyproject.toml").read_text()
    assert 'cer = "cer.cli.entry:main"' in pyproject


def test_the_collector_skips_start_up_and_exit_but_runs_during_the_command() -> None:
    code = (
        "import gc, json, sys\n"
        "import cer.cli.main as command_line\n"
        "seen = {}\n"
        "def command(argv=None):\n"
        "    seen['enabled'] = gc.isenabled()\n"
        "    seen['frozen'] = gc.get_freeze_count()\n"
        "    return 0\n"
        "command_line.main = command\n"
        "from cer.cli import entry\n"
        "sys.argv = ['cer', 'history']\n"
        "seen['code'] = entry.main()\n"
        "seen['enabled_after'] = gc.isenabled()\n"
        "print(json.dumps(seen))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout)
    assert seen == {"enabled": True, "frozen": seen["frozen"], "code": 0, "enabled_after": True}
    assert seen["frozen"] > 1000  # what the imports made is out of later collections


@pytest.mark.parametrize(
    "program",
    [
        pytest.param("from cer.cli.entry import main; raise SystemExit(main())", id="cer"),
        pytest.param("from cer.tui.__main__ import main; raise SystemExit(main())", id="cer-tui"),
    ],
)
def test_a_working_directory_that_is_gone_is_said_in_words(tmp_path: Path, program: str) -> None:
    """Run from a folder removed under it, ``cer`` once ended with a traceback and exit
    1, the code of a failed case."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        f"import os, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); "
        f"sys.argv = ['cer', 'run', 'evals.toml', '--impl', 'm:f']; {program}"
    )
    if "tui" in program:
        script = script.replace("'cer', 'run', ", "'cer-tui', ")
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "the working directory cannot be read" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr

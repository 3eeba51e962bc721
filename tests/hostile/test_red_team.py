"""Attacks on the runner's trust guarantees from a hostile implementation's side.

Each test is an implementation (or harness) that, where the attack works, gets a
result it did not earn: a pass read out of the suite, a memory bound met by resetting
the kernel's count, a runner that never finishes. Each asserts the truthful outcome.

- Code that runs before the sandbox: the worker starts as ``python -m cer.worker``,
  and an implementation's folder may hold a ``cer`` package or a module named like a
  standard library module that the worker imports before it confines itself.
- Memory: the kernel's peak resident count can be reset by the process it counts
  (``/proc/self/clear_refs``); only the sandbox keeps a case from doing that.
- A harness names the files of its implementation; the supervisor hashes them, and a
  file swapped for a FIFO between the check and the read must not stall it.
- History, suite shape and implementation identity (classes 5 and 6 of the trust
  model): a trigger planted with ``--sandbox off``, a misspelt ``[[case]]`` array,
  and a module imported lazily by a case that changes between two runs.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cer import sandbox
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.events import ImplementationLoaded
from cer.model import RunResult, Status
from cer.suite.loader import load_suite

ROOT = Path(__file__).resolve().parents[2]
SECRET = "SECRET-5150-kept-in-the-suite"
LANDLOCK = pytest.mark.skipif(not sandbox.status().available, reason="this kernel has no Landlock")

SUITE = f"""\
commonsformat_evals = "0.2"

[[cases]]
name = "secret"
category = "functional"
input = {{}}
expect = {{ output = "{SECRET}" }}
"""

READER = """\
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def answer(case):
    with open(os.path.join(HERE, "evals.toml"), encoding="utf-8") as handle:
        return re.search(r"SECRET-[0-9]+-[a-z-]+", handle.read()).group(0)
"""

FAKE_CER = """\
# Stands in for the runner's package: the real modules are found behind it, and the
# sandbox is made a no-op that reports success.
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    _real = os.path.join(_entry or ".", "cer")
    if os.path.isfile(os.path.join(_real, "worker.py")) and (
        os.path.realpath(_real) != os.path.realpath(_here)
    ):
        __path__.append(_real)
        break
from cer import sandbox as _sandbox

_sandbox.apply = lambda policy, abi=None: int(abi or 1)
"""

SHADOW = """\
# Named like a standard library module: loads the real one, then switches the
# sandbox off before the worker applies it.
import importlib.machinery
import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in sys.path if os.path.realpath(p or ".") != _here]
_spec = importlib.machinery.PathFinder.find_spec(__name__, _rest)
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)
sys.modules[__name__] = _real
from cer import sandbox as _sandbox

_sandbox.apply = lambda policy, abi=None: int(abi or 1)
"""


def _module(root: Path, *extra: tuple[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evals.toml").write_text(SUITE, encoding="utf-8")
    (root / "reader.py").write_text(READER, encoding="utf-8")
    for name, text in extra:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _run(root: Path, impl: str = "reader:answer", **options: Any) -> RunResult:
    options.setdefault("timeout", 10.0)
    return run_suite(load_suite(root / "evals.toml"), RunOptions(impl=impl, **options))


def _assert_denied(run: RunResult, root: Path) -> None:
    (result,) = run.results
    assert run.summary.passed == 0
    assert result.status is Status.ERRORED, result.reason
    assert f"the sandbox denied access to {root}/evals.toml" in (result.reason or "")
    assert run.conditions is not None
    assert run.conditions.sandbox.startswith(("landlock", "namespaces + landlock"))


# ------------------------------------------------------- code that runs before the sandbox


@LANDLOCK
@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_cer_package_in_the_working_directory_does_not_replace_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    # `python -m cer.worker` would look in the working directory first: a `cer`
    # package there (the implementation's own folder) would be the worker, run before
    # the sandbox, and could leave the sandbox off while the run says it was on.
    root = _module(tmp_path / "impl", ("cer/__init__.py", FAKE_CER))
    monkeypatch.chdir(root)
    _assert_denied(_run(root, isolation=isolation), root)


@LANDLOCK
@pytest.mark.parametrize(
    ("module", "options"),
    [("sysconfig", {}), ("resource", {"max_memory": 1 << 30})],
    ids=["sysconfig", "resource-with-max-memory"],
)
def test_a_module_named_like_the_standard_library_runs_only_inside_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, options: dict[str, Any]
) -> None:
    # The suite's folder is an import root. A module there named like one the worker
    # imports itself must not be imported before the sandbox is in force.
    root = _module(tmp_path / "impl", (f"{module}.py", SHADOW))
    monkeypatch.chdir(tmp_path)
    _assert_denied(_run(root, **options), root)


def test_the_worker_does_not_put_the_working_directory_first_on_its_path(
    tmp_path: Path,
) -> None:
    # The launcher of the worker, as the supervisor starts it, from a folder whose
    # `cer` package would win over the real one.
    from cer.engine.python.workerproc import WorkerProcess

    (tmp_path / "cer").mkdir()
    (tmp_path / "cer" / "__init__.py").write_text("raise SystemExit(71)\n", encoding="utf-8")
    worker = WorkerProcess(cwd=str(tmp_path))
    try:
        time.sleep(0.5)
        assert worker.process.poll() is None, "the working directory's cer package ran"
    finally:
        worker.kill()


# ------------------------------------------------------------------------------- memory

MEMORY_SUITE = """\
commonsformat_evals = "0.2"

[[cases]]
name = "small"
category = "functional"
input = {}
expect = { output = 1, resident_memory_mb_max = 80 }
"""

RESET_PEAK = """\
def answer(case):
    block = bytearray(300 * 1024 * 1024)
    for index in range(0, len(block), 4096):
        block[index] = 1
    del block
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # resets the peak resident count (VmHWM)
    except OSError:
        pass
    return 1
"""


def _memory_module(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evals.toml").write_text(MEMORY_SUITE, encoding="utf-8")
    (root / "peak.py").write_text(RESET_PEAK, encoding="utf-8")
    return root


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM is Linux's")
def test_a_case_cannot_reset_its_peak_memory_without_the_sandbox(tmp_path: Path) -> None:
    root = _memory_module(tmp_path)
    run = _run(root, "peak:answer", sandbox="off")
    (result,) = run.results
    assert result.status is Status.ERRORED, result.reason
    assert "could not verify resident_memory_mb" in (result.reason or "")
    assert "sandbox" in (result.reason or "")


@LANDLOCK
def test_a_case_cannot_reset_its_peak_memory_under_the_sandbox(tmp_path: Path) -> None:
    root = _memory_module(tmp_path)
    (result,) = _run(root, "peak:answer").results
    assert result.status is Status.FAIL, result.reason
    assert "expected resident_memory_mb <= 80" in (result.reason or "")


# ------------------------------------------------------------------- a harness's files


def test_a_file_a_harness_names_that_turns_into_a_fifo_cannot_stall_the_supervisor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A harness names its files in `started`, and can swap one for a FIFO between the
    # supervisor's check and its read (a race it can run as often as it likes). Here
    # the check is made to see a regular file, which is what winning the race means.
    from cer.engine.command import identity as commandimpl

    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    monkeypatch.setattr(Path, "is_file", lambda self: True)
    done: list[str] = []
    thread = threading.Thread(
        target=lambda: done.append(
            commandimpl.command_identity("command", ["harness"], extra_files=[str(fifo)])[0]
        ),
        daemon=True,
    )
    thread.start()
    thread.join(5.0)
    if not done:  # let the stalled read go, so that the test process can end
        with open(fifo, "wb"):
            pass
        thread.join(5.0)
    assert done, "hashing a harness's files blocked on a FIFO"


# ------------------------------------------------------ classes 5 and 6 of the trust model

TRIGGER_SUITE = """\
commonsformat_evals = "0.2"

[[cases]]
name = "plants"
category = "functional"
input = {}
expect = { output = 2 }
"""

PLANT_TRIGGER = """\
import os
import sqlite3


def answer(case):
    path = os.path.join(os.getcwd(), ".cer", "history.sqlite")
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TRIGGER IF NOT EXISTS cer_keep_green AFTER INSERT ON eval_case_results "
        "BEGIN UPDATE eval_case_results SET status = 'pass', reason = NULL; END"
    )
    db.commit()
    db.close()
    return 1
"""


def _cer(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            "import sys; from cer.cli.commands import main; sys.exit(main())",
            *words,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


def test_a_trigger_planted_without_the_sandbox_is_refused_not_obeyed(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(TRIGGER_SUITE, encoding="utf-8")
    (tmp_path / "plant.py").write_text(PLANT_TRIGGER, encoding="utf-8")
    first = _cer("run", "evals.toml", "--impl", "plant:answer", "--sandbox", "off", cwd=tmp_path)
    # The check runs inside the transaction that records the run: the trigger the
    # case planted is found before it can fire, and the run is refused (exit 2).
    assert first.returncode == 2, first.stdout + first.stderr
    assert "cer_keep_green" in first.stderr
    names = [
        row[0]
        for row in sqlite3.connect(tmp_path / ".cer" / "history.sqlite").execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        )
    ]
    assert names == ["cer_keep_green"]  # the probe is real: the trigger is there
    again = _cer("run", "evals.toml", "--impl", "plant:answer", "--sandbox", "off", cwd=tmp_path)
    assert again.returncode == 2, again.stdout + again.stderr
    assert "cer_keep_green" in again.stderr
    rerun = _cer("run", "evals.toml", "--impl", "plant:answer", "--failed", cwd=tmp_path)
    assert rerun.returncode == 2, rerun.stdout + rerun.stderr
    assert "nothing to rerun" not in rerun.stdout + rerun.stderr


def test_a_misspelt_case_array_is_refused_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text(
        SUITE + '\n[[case]]\nname = "lost"\ncategory = "functional"\ninput = {}\n'
        "expect = { output = 1 }\n",
        encoding="utf-8",
    )
    (tmp_path / "answer.py").write_text(f"def answer(case):\n    return {SECRET!r}\n")
    done = _cer("run", "evals.toml", "--impl", "answer:answer", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "case" in done.stderr and "passed" not in done.stdout


LAZY_IMPL = """\
def answer(case):
    import lazyhelper  # imported by the case, never by the worker's import

    return lazyhelper.VALUE
"""


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_module_a_case_imports_lazily_is_part_of_the_implementation_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals.toml").write_text(SUITE.replace(f'"{SECRET}"', "1"), encoding="utf-8")
    (tmp_path / "lazyuser.py").write_text(LAZY_IMPL, encoding="utf-8")
    helper = tmp_path / "lib" / "lazyhelper.py"
    helper.parent.mkdir()
    helper.write_text("VALUE = 1\n", encoding="utf-8")
    options = {"paths": (str(helper.parent),), "isolation": isolation}
    loaded: list[tuple[str, tuple[str, ...]]] = []

    def on_event(event: object) -> None:
        if isinstance(event, ImplementationLoaded):
            loaded.append((event.implementation_id, event.source_files))

    first = run_suite(
        load_suite(tmp_path / "evals.toml"),
        RunOptions(impl="lazyuser:answer", timeout=10.0, **options),  # type: ignore[arg-type]
        on_event=on_event,
    )
    assert [r.status for r in first.results] == [Status.PASS]
    # The import's id first, then the id grown by the case's module, which a watcher
    # now watches; the run's id is the grown one.
    assert len(loaded) == 2
    assert str(helper) not in loaded[0][1] and str(helper) in loaded[1][1]
    assert first.implementation_id == loaded[1][0] != loaded[0][0]
    helper.write_text("VALUE = 2\n", encoding="utf-8")
    second = _run(tmp_path, "lazyuser:answer", **options)
    assert [r.status for r in second.results] == [Status.FAIL]
    assert second.implementation_id != first.implementation_id


def test_files_a_case_reports_are_checked_and_grow_the_id_as_an_import_would(
    tmp_path: Path,
) -> None:
    from cer.engine.identity import extend, identify

    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text("A = 1\n", encoding="utf-8")
    second.write_text("B = 1\n", encoding="utf-8")
    start = identify("m:f", [str(first)])
    grown = extend(start, "m:f", [str(second)])
    # The same id as a run that imported both files up front.
    assert grown.implementation_id == identify("m:f", [str(first), str(second)]).implementation_id
    assert grown.files == (str(first), str(second))
    assert extend(grown, "m:f", [str(first)]) is grown  # nothing new: nothing hashed
    # A list the case mangled cannot say which code ran: a one-off id, files kept.
    for bad in ("unknown", [3], ["relative.py"], {"a": 1}):
        odd = extend(grown, "m:f", bad)
        assert not odd.known and odd.files == grown.files
        assert extend(odd, "m:f", [str(tmp_path / "c.py")]).known is False


# -------------------------------------------------------------- cer-tui and its processes

DAEMON_IMPL = """\
import os
import time

PIDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids")


def answer(case):
    if os.fork() == 0:  # a daemon: a double fork in a session of its own
        os.setsid()
        if os.fork() == 0:
            with open(PIDS, "a") as handle:
                handle.write(f"{os.getpid()}\\n")
            while True:
                time.sleep(0.1)
        os._exit(0)
    time.sleep(60)  # still running when the terminal goes
    return 1
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="adoption is Linux's")
@pytest.mark.parametrize("signum", [15, 1], ids=["SIGTERM", "SIGHUP"])
def test_cer_tui_stopped_by_a_signal_leaves_nothing_running(tmp_path: Path, signum: int) -> None:
    pytest.importorskip("textual")
    import pty
    import signal

    (tmp_path / "evals.toml").write_text(SUITE.replace(f'"{SECRET}"', "1"), encoding="utf-8")
    (tmp_path / "daemon.py").write_text(DAEMON_IMPL, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(tmp_path)
        os.environ["TERM"] = "xterm-256color"
        os.execv(
            sys.executable,
            [
                sys.executable,
                "-P",
                "-c",
                "import sys; from cer.tui.__main__ import main; sys.exit(main())",
                "evals.toml",
                "--impl",
                "daemon:answer",
                "--no-history",
                "--no-watch",
                "--timeout",
                "120",
                "--sandbox",
                "off",
            ],
        )
    pids = tmp_path / "pids"
    try:
        deadline = time.monotonic() + 30
        while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                os.read(fd, 65536)
            time.sleep(0.05)
        assert pids.exists(), "the case never started its daemon"
        os.kill(pid, signum)
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                os.read(fd, 65536)
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = raw
                break
            time.sleep(0.05)
        assert status is not None, "cer-tui did not exit"
        assert os.waitstatus_to_exitcode(status) == 128 + signum
        daemon = int(pids.read_text().split()[0])
        time.sleep(0.3)
        assert not _alive(daemon), "the case's daemon outlived cer-tui"
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        if pids.exists():
            for word in pids.read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(word), signal.SIGKILL)
        os.close(fd)


def test_cer_tui_keeps_the_implementation_away_from_a_history_given_by_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The history's reasons hold the expectations of failed cases; outside `.cer/` it
    # is kept away only when the run names it, as `cer run --history` does.
    pytest.importorskip("textual")
    from cer import config as run_options
    from cer.engine.confinement import protected_paths
    from cer.tui.__main__ import build_parser, protect_history

    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    history = tmp_path / "elsewhere" / "h.sqlite"
    args = build_parser().parse_args(
        ["evals.toml", "--impl", "a:f", "--impl", "b:f", "--history", str(history)]
    )
    resolved = protect_history(run_options.resolve_run(args), history)
    suite = load_suite(tmp_path / "evals.toml")
    for each in resolved.implementations:
        assert str(history) in protected_paths(suite, each)

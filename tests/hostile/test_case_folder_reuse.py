"""A worker's cases share one scratch folder, emptied after each: what breaks that.

Each test plays an implementation that turns the emptying (or a removal) against the
runner, and asserts the truthful outcome. Found by trying: a tree deeper than a path
can name was never emptied (the folder was replaced after every case, and the run's
folder was left behind when the run ended); a daemon of a per-case command, still
running while the supervisor removed its folder, swapped a folder being removed for a
symbolic link and made the supervisor delete files outside every sandbox; the time
emptying took was counted to the next case, handed over before it was done; and a
worker that could not make a new folder (a full file system) crashed, charging the
next case, which never ran, with its end; and a folder that had once held thousands of
entries cost every later case a read of its empty blocks.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cer import process_tree, sandbox
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.sandbox import scratch
from cer.suite.loader import load_suite
from support import probe_suite

pytestmark = pytest.mark.skipif(
    not sandbox.status().available, reason="this kernel has no Landlock"
)

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "examples" / "harnesses" / "calc_harness.py"

PROBE = r"""
import os
import socket
import tempfile
import time


def attack(kind, n=0, victim="", past=0):
    here = tempfile.gettempdir()
    found = sorted(os.listdir(here))
    started = time.monotonic()
    if kind == "deep":  # deeper than PATH_MAX: no path names its bottom
        fd = os.open(here, os.O_RDONLY)
        for _ in range(30):
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        os.close(fd)
        # and beside it, names and kinds a removal may trip over
        top = os.fsencode(here)
        for name in (b"new\nline", b"not utf-8 \xff\xfe", b"-rf", b" "):
            open(os.path.join(top, name), "w").close()
        with socket.socket(socket.AF_UNIX) as listener:  # mknod (a FIFO) is refused
            listener.bind(os.path.join(here, "socket"))
        os.link(os.path.join(here, "-rf"), os.path.join(here, "hard"))
        os.symlink(here, os.path.join(here, "loop"))
        for mode in (0, 0o100, 0o300, 0o500):
            folder = os.path.join(here, f"mode-{mode:o}")
            os.makedirs(os.path.join(folder, "inner"))
            open(os.path.join(folder, "inner", "file"), "w").close()
            os.chmod(os.path.join(folder, "inner"), mode)
            os.chmod(folder, mode)
    elif kind == "litter":  # n files, or as many as grow the folder past `past` bytes
        fd = os.open(here, os.O_RDONLY)
        i = 0
        while i < n or os.fstat(fd).st_size <= past:
            os.close(os.open(f"f{i}", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
            i += 1
        os.close(fd)
    elif kind == "swap":  # a daemon that outlives its process swaps a folder for a link
        ready_r, ready_w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for std in (0, 1, 2):
                    os.dup2(null, std)
                folder = os.path.join(here, "a")
                os.mkdir(folder)
                for i in range(n):
                    open(os.path.join(folder, f"f{i:05d}"), "w").close()
                os.write(ready_w, b"r")
                end = time.monotonic() + 10
                while time.monotonic() < end:
                    try:
                        if len(os.listdir(folder)) < n:  # its removal began
                            os.rename(folder, os.path.join(here, "b"))
                            os.symlink(victim, folder)
                            break
                    except FileNotFoundError:
                        break  # removed before it could swap it
                    except OSError:
                        pass
            os._exit(0)
        os.read(ready_r, 1)
    elif kind == "fill":  # inside the worker: fill the file system, keep the folder
        run = os.path.dirname(here)
        os.rename(here, os.path.join(run, "kept"))
        with_room = 0
        try:
            while True:
                os.mkdir(os.path.join(run, f"fill-{with_room}"))
                with_room += 1
        except OSError:
            pass
    return {"found": found, "folder": here, "spent_ms": (time.monotonic() - started) * 1000}
"""


def _module(root: Path, cases: list[tuple[str, str]]) -> None:
    (root / "probe.py").write_text(PROBE, encoding="utf-8")
    (root / "evals.toml").write_text(probe_suite(cases), encoding="utf-8")


def _run(root: Path, kind: str = "python", **options: Any) -> RunResult:
    options.setdefault("timeout", 20.0)
    impl = {
        "python": "probe:attack",
        "command-per-case": f"{sys.executable} {HARNESS} --per-case "
        "--module probe.py --function attack",
    }[kind]
    return run_suite(load_suite(root / "evals.toml"), RunOptions(impl=impl, kind=kind, **options))


def _outputs(run: RunResult) -> list[dict[str, Any]]:
    found = []
    for result in run.results:
        assert result.status is Status.FAIL, (result.case_name, result.reason)
        found.append(dict(result.observation or {}))  # a returned table is whole
    return found


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the harness names probe.py relative to here
    return tmp_path


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_tree_deeper_than_a_path_can_name_is_emptied(module: Path, isolation: str) -> None:
    """A removal that named every entry by its whole path could not reach below
    ``PATH_MAX``: the folder was given up after every case, and what was left of them
    all stayed in ``/tmp`` after the run. Beside the tree, odd names, a socket, a hard
    link, a link to the folder itself and folders without permissions go too."""
    _module(module, [(f"deep-{n}", 'kind = "deep"') for n in range(3)])
    outputs = _outputs(_run(module, isolation=isolation))
    assert [output["found"] for output in outputs] == [[]] * 3, outputs
    (folder,) = {output["folder"] for output in outputs}  # emptied, so kept
    assert not os.path.exists(os.path.dirname(folder))  # the run's, removed whole


def test_removal_never_follows_a_folder_swapped_for_a_link(
    module: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A per-case command's daemon still runs while the supervisor removes the
    command's folder: ``cer run`` ends it first, but a program that calls the engine
    and adopts no orphans cannot (the test stands that up, whatever this process
    adopts). Once the removal has listed a folder in it, the daemon swaps that folder
    for a symbolic link to a folder of the user's: the supervisor, outside every
    sandbox, must not delete a thing there."""
    monkeypatch.setattr(process_tree, "_adopting", False)
    victim = tmp_path / "victim"
    victim.mkdir()
    names = [f"f{i:05d}" for i in range(3000)]
    for name in names:
        (victim / name).write_bytes(b"")
    _module(module, [("swap", f'kind = "swap", n = {len(names)}, victim = "{victim}"')])
    (output,) = _outputs(_run(module, "command-per-case"))
    assert output["found"] == []
    assert sorted(os.listdir(victim)) == names
    assert not os.path.exists(os.path.dirname(output["folder"]))


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_what_a_case_leaves_costs_its_own_time(module: Path, isolation: str) -> None:
    """The next case is handed over as soon as a result arrives and timed from there:
    emptying the folder after the result was sent counted to the next case's time (and
    timeout) what the case before it had left."""
    _module(module, [("litter", 'kind = "litter", n = 6000'), ("after", 'kind = "none"')])
    run = _run(module, isolation=isolation)
    litter, after = run.results
    outputs = _outputs(run)
    assert outputs[1]["found"] == []
    emptying_ms = litter.elapsed_ms - outputs[0]["spent_ms"]
    assert after.elapsed_ms * 4 < emptying_ms, (litter.elapsed_ms, outputs, after.elapsed_ms)


@functools.cache
def _folders_do_not_shrink(where: str) -> bool:
    """Whether a folder here stays large once emptied (ext4 does; tmpfs does not). It is
    filled only until it is past :data:`scratch.GROWN` (creating a file is slow on a
    busy disk), and asked once for every test of the module."""
    probe = tempfile.mkdtemp(dir=where)
    made = 0
    try:
        while os.stat(probe).st_size <= scratch.GROWN and made < 20000:
            Path(probe, f"f{made}").touch()
            made += 1
        for i in range(made):
            Path(probe, f"f{i}").unlink()
        return os.stat(probe).st_size > scratch.GROWN
    finally:
        os.rmdir(probe)


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_folder_grown_large_is_not_kept(module: Path, isolation: str) -> None:
    """An ext4 folder never shrinks: after a case left thousands of files in it, checking
    that it is empty read its empty blocks after every later case (0.14 ms a case, as
    much as the rest of the sandbox). Such a folder is replaced once, not read for ever.
    The case leaves just enough files to grow its folder past the size that is kept."""
    if not _folders_do_not_shrink(tempfile.gettempdir()):
        pytest.skip("folders here shrink when emptied")
    cases = [("litter", f'kind = "litter", past = {scratch.GROWN}')]
    _module(module, [*cases, ("next", 'kind = "none"'), ("last", 'kind = "none"')])
    outputs = _outputs(_run(module, isolation=isolation))
    assert [output["found"] for output in outputs] == [[]] * 3, outputs
    folders = [output["folder"] for output in outputs]
    assert folders[0] != folders[1] == folders[2], folders


@contextlib.contextmanager
def _small_file_system(root: Path) -> Iterator[Path]:
    """A tmpfs with room for a few dozen entries (needs the right to mount)."""
    mount = root / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=64", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_worker_that_cannot_make_a_new_folder_charges_no_case(
    module: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside the worker a case may write anywhere in the run's folder: it fills the
    file system and takes its folder away, so no new one can be made. The worker
    crashed, and the next case, already handed over and never run, was reported as
    having ended the worker. Now no case is charged with it: the cases after are not
    run, and say why; nothing is left."""
    with _small_file_system(tmp_path) as small:
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        _module(module, [("fill", 'kind = "fill"'), ("after", 'kind = "none"')])
        fill, after = _run(module, isolation="none").results
        assert fill.status is Status.FAIL, fill.reason
        assert after.status is Status.ERRORED, after.reason
        assert after.reason is not None
        assert "ended the worker" not in after.reason
        assert "scratch folder could not be made" in after.reason, after.reason
        assert os.listdir(small) == []

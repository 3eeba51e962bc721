"""Every case finds its scratch folder empty, and nothing of a run is left anywhere.

All cases of a run once shared one scratch folder, so what one case wrote there decided
the next (a worker's cases now share one that the worker empties after each case);
``/dev/shm`` was writable and never cleaned, so a 64 MiB file and symbolic links
outlived the run; a scratch file marked immutable was silently left by cleanup.
Each test here makes the attempt from inside a case and asserts it changes nothing.
"""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from cer import sandbox
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.sandbox import privileges, scratch
from cer.suite.loader import load_suite
from support import probe_suite

pytestmark = pytest.mark.skipif(
    not sandbox.status().available, reason="this kernel has no Landlock"
)

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "examples" / "harnesses" / "calc_harness.py"
IS_ROOT = os.geteuid() == 0


def _private_shm() -> bool:
    """Whether a process of this user gets a ``/dev/shm`` of its own here (root, or a
    user the kernel gives a user namespace); asked of a child, which it changes."""
    import subprocess

    code = "from cer.sandbox import privileges; print(privileges.private_shm())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip() == "True"


PRIVATE_SHM = sys.platform.startswith("linux") and _private_shm()

PROBE = r"""
import os
import tempfile


def attack(kind, mark=""):
    here = tempfile.gettempdir()
    if kind == "plant":
        found = sorted(os.listdir(here))
        with open(os.path.join(here, "planted"), "w") as handle:
            handle.write("from an earlier case")
        return {"found": found, "folder": here, "env": os.environ.get("TMPDIR", "")}
    if kind == "litter":  # what is hard to remove, and a folder no later case could use
        found = sorted(os.listdir(here))
        os.makedirs(os.path.join(here, "locked", "deep"))
        with open(os.path.join(here, "locked", "deep", "answer"), "w") as handle:
            handle.write("42")
        os.chmod(os.path.join(here, "locked", "deep"), 0)
        os.chmod(os.path.join(here, "locked"), 0)
        os.symlink("/etc/passwd", os.path.join(here, "link"))
        os.chmod(here, 0o500)
        return {"found": found, "folder": here, "env": os.environ.get("TMPDIR", "")}
    if kind == "mark":  # on the folder itself, not in it
        found = sorted(os.listxattr(here))
        os.setxattr(here, "user.answer", b"42")
        return {"found": found, "folder": here}
    if kind == "replace":  # its folder swapped for a file (possible only inside the worker)
        found = sorted(os.listdir(here))
        try:
            os.rmdir(here)
            with open(here, "w") as handle:
                handle.write("not a folder")
            done = "replaced"
        except OSError as exc:
            done = type(exc).__name__
        return {"found": found, "folder": here, "env": os.environ.get("TMPDIR", ""), "done": done}
    if kind == "beside":
        try:
            with open(os.path.join(os.path.dirname(here), "beside"), "w") as handle:
                handle.write("x")
        except OSError:  # refused by Landlock, or a read-only folder of its world
            return "refused"
        return "written"
    if kind == "list":  # the run's folder, where every case's own folder is made
        try:
            return {"listed": sorted(os.listdir(os.path.dirname(here)))}
        except PermissionError:
            return {"listed": "refused"}
    if kind == "shm":
        found = sorted(os.listdir("/dev/shm"))
        with open(f"/dev/shm/{mark}", "wb") as handle:
            handle.write(b"x" * 65536)
        os.symlink("/etc/passwd", f"/dev/shm/{mark}-link")
        return found
    if kind == "listen":  # as multiprocessing's forkserver does: a socket in a new folder
        import socket

        path = os.path.join(tempfile.mkdtemp(prefix="pymp-"), "listener-0123abcd")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(path)
        return {"folder": here, "socket": path}
    raise ValueError(kind)
"""


def _impl(kind: str) -> str:
    return {
        "python": "probe:attack",
        "command": f"{sys.executable} {HARNESS} --module probe.py --function attack",
        "command-per-case": f"{sys.executable} {HARNESS} --per-case "
        "--module probe.py --function attack",
    }[kind]


def _module(root: Path, cases: list[tuple[str, str]]) -> None:
    (root / "probe.py").write_text(PROBE, encoding="utf-8")
    (root / "evals.toml").write_text(probe_suite(cases), encoding="utf-8")


def _run(root: Path, kind: str, **options: Any) -> RunResult:
    options.setdefault("timeout", 10.0)
    return run_suite(
        load_suite(root / "evals.toml"), RunOptions(impl=_impl(kind), kind=kind, **options)
    )


def _outputs(run: RunResult) -> list[Any]:
    found = []
    for result in run.results:
        assert result.status is Status.FAIL, (result.case_name, result.reason)
        observation = dict(result.observation or {})
        found.append(observation.get("output", observation))  # a returned table is whole
    return found


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the harness names probe.py relative to here
    return tmp_path


@pytest.mark.parametrize(
    ("kind", "isolation"),
    [
        pytest.param("python", "fork", id="python-fork"),
        pytest.param("python", "none", id="python-none"),
        pytest.param("command-per-case", "fork", id="per-case"),
    ],
)
def test_each_case_finds_its_scratch_folder_empty(module: Path, kind: str, isolation: str) -> None:
    """A worker's cases share one folder, emptied after each case (a per-case command
    gets a new one each time); what a case leaves there, however hard to remove, is
    gone before the next case starts."""
    cases = [(f"plant-{n}", 'kind = "plant"') for n in range(3)]
    cases += [(f"litter-{n}", 'kind = "litter"') for n in range(3)]
    _module(module, cases)
    outputs = _outputs(_run(module, kind, isolation=isolation))
    assert [output["found"] for output in outputs] == [[]] * 6, outputs
    folders = [output["folder"] for output in outputs]
    assert len(set(folders)) == (6 if kind == "command-per-case" else 1), folders
    assert all(output["env"] == output["folder"] for output in outputs), outputs
    for folder in folders:
        assert not os.path.exists(folder)
    assert not os.path.exists(os.path.dirname(folders[0]))  # the run's, removed too


@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_what_a_case_marks_on_its_folder_is_not_there_for_the_next(
    module: Path, isolation: str
) -> None:
    """The folder is reused only while a case changed nothing on it but its contents
    and mode: one given an extended attribute is replaced by a new one."""
    probe = os.path.join(str(module), "probe-xattr")
    os.mkdir(probe)
    try:
        os.setxattr(probe, "user.answer", b"42")
    except OSError:
        pytest.skip("this file system keeps no user extended attributes")
    _module(module, [(f"mark-{n}", 'kind = "mark"') for n in range(3)])
    outputs = _outputs(_run(module, "python", isolation=isolation))
    assert ["user.answer" in output["found"] for output in outputs] == [False] * 3, outputs
    assert len({output["folder"] for output in outputs}) == 3, outputs


def test_a_case_that_swaps_its_folder_for_a_file_leaves_the_next_a_new_one(
    module: Path,
) -> None:
    """Without isolation a case runs inside the worker, which may write to the whole run
    folder: a case can remove its folder and put a file in its place. The next case
    finds a new, empty folder (with a case process of its own, the case may not)."""
    _module(module, [(f"replace-{n}", 'kind = "replace"') for n in range(3)])
    outputs = _outputs(_run(module, "python", isolation="none"))
    assert [output["found"] for output in outputs] == [[]] * 3, outputs
    assert [output["done"] for output in outputs] == ["replaced"] * 3, outputs
    assert len({output["folder"] for output in outputs}) == 3, outputs
    assert all(output["env"] == output["folder"] for output in outputs), outputs
    forked = _outputs(_run(module, "python", isolation="fork"))
    assert [output["done"] for output in forked] == ["PermissionError"] * 3, forked


def test_a_harness_has_one_scratch_folder_for_its_lifetime(module: Path) -> None:
    _module(module, [(f"plant-{n}", 'kind = "plant"') for n in range(3)])
    outputs = _outputs(_run(module, "command"))
    assert [output["found"] for output in outputs] == [[], ["planted"], ["planted"]]
    (folder,) = {output["folder"] for output in outputs}
    assert os.path.basename(os.path.dirname(folder)).startswith("cer-scratch-")
    assert not os.path.exists(folder)


@pytest.mark.parametrize(
    "kind", [pytest.param("python", id="python-fork"), pytest.param("command-per-case")]
)
def test_a_case_cannot_write_beside_its_own_scratch_folder(module: Path, kind: str) -> None:
    """Not in the run's folder, where the next case's folder is made."""
    _module(module, [("beside", 'kind = "beside"')])
    assert _outputs(_run(module, kind)) == ["refused"]


@pytest.mark.parametrize(
    ("kind", "isolation"),
    [
        pytest.param("python", "fork", id="python-fork"),
        pytest.param("python", "none", id="python-none"),
        pytest.param("command-per-case", "fork", id="per-case"),
    ],
)
def test_a_case_cannot_list_the_folders_of_other_cases(
    module: Path, kind: str, isolation: str
) -> None:
    """The run's folder holds every case's own, under names no case can guess: were it
    listable, a case could read what the case before it (or one beside it, with -j)
    left in a folder not removed yet."""
    _module(module, [(f"list-{n}", 'kind = "list"') for n in range(3)])
    outputs = _outputs(_run(module, kind, isolation=isolation, jobs=2))
    assert [output["listed"] for output in outputs] == ["refused"] * 3, outputs


@pytest.mark.skipif(not PRIVATE_SHM, reason="this user may neither mount nor make a user namespace")
@pytest.mark.parametrize(
    ("kind", "isolation"),
    [
        pytest.param("python", "fork", id="python-fork"),
        pytest.param("python", "none", id="python-none"),
        pytest.param("command", "fork", id="harness"),
        pytest.param("command-per-case", "fork", id="per-case"),
    ],
)
def test_dev_shm_is_private_and_nothing_written_there_outlives_the_run(
    module: Path, kind: str, isolation: str
) -> None:
    mark = f"cer-private-shm-{os.getpid()}-{kind}-{isolation}"
    outside = Path("/dev/shm") / f"{mark}-outside"
    outside.write_bytes(b"the machine's own")
    try:
        _module(module, [("shm", f'kind = "shm", mark = "{mark}"')])
        (found,) = _outputs(_run(module, kind, isolation=isolation))
        assert found == [], found  # not even the machine's own file is seen
        assert not Path(f"/dev/shm/{mark}").exists()
        assert not Path(f"/dev/shm/{mark}-link").is_symlink()
        assert outside.read_bytes() == b"the machine's own"
    finally:
        outside.unlink()


@pytest.mark.skipif(not IS_ROOT, reason="needs root: marking a file immutable needs a capability")
def test_removal_takes_immutable_and_unwritable_entries(tmp_path: Path) -> None:
    """What the run leaves is removed whole, even entries made hard to remove (by a
    process that held the capability: the implementation's side no longer does)."""
    folder = Path(scratch.make(str(tmp_path), "case"))
    stuck = folder / "deep" / "stuck"
    stuck.parent.mkdir()
    stuck.write_text("x", encoding="utf-8")
    locked = folder / "locked"
    locked.mkdir()
    (locked / "inside").write_text("x", encoding="utf-8")
    for path, flag in ((stuck, 0x10), (stuck.parent, 0x10), (folder / "deep", 0x20)):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, 0x40086602, struct.pack("i", flag))
        except OSError as exc:
            pytest.skip(f"this file system keeps no such flags: {exc}")
        finally:
            os.close(fd)
    locked.chmod(0)
    assert scratch.remove(str(folder))
    assert not folder.exists()


def test_removal_of_a_deep_tree_needs_no_recursion(tmp_path: Path) -> None:
    folder = Path(scratch.make(str(tmp_path), "case"))
    path = folder
    for _ in range(300):
        path = path / "d"
    path.mkdir(parents=True)
    assert scratch.remove(str(folder))
    assert not folder.exists()
    assert privileges.state()["NoNewPrivs"] in (0, 1)


@pytest.mark.parametrize(
    "kind",
    [pytest.param("python", id="python"), pytest.param("command-per-case", id="per-case")],
)
def test_a_case_may_make_a_unix_socket_in_its_folder_under_a_long_tmpdir(
    module: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A Unix socket's path holds at most 107 bytes: with the scratch folders' names once
    61 characters long, ``multiprocessing``'s forkserver failed ("AF_UNIX path too
    long") under any ``TMPDIR`` of 15 characters or more."""
    tmpdir = module / ("t" * max(1, 30 - len(str(module)) - 1))
    if len(str(tmpdir)) > 30:
        tmpdir = Path(tempfile.mkdtemp(prefix="cer-", dir="/tmp"))
    tmpdir.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    _module(module, [("listen", 'kind = "listen"')])
    (output,) = _outputs(_run(module, kind))
    assert output["socket"].startswith(output["folder"] + "/"), output
    assert output["folder"].startswith(str(tmpdir) + "/"), output


@pytest.mark.skipif(not PRIVATE_SHM, reason="this user may neither mount nor make a user namespace")
def test_a_tmpdir_in_dev_shm_still_gives_every_case_its_folder(
    module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The implementation's side has a ``/dev/shm`` of its own, which hid a run's folder
    made in the machine's one (``TMPDIR=/dev/shm``): every case was errored."""
    shm = tempfile.mkdtemp(prefix="cer-test-", dir="/dev/shm")
    try:
        monkeypatch.setattr(tempfile, "tempdir", shm)
        _module(module, [("plant", 'kind = "plant"')])
        (output,) = _outputs(_run(module, "python"))
        assert output["found"] == [], output
        assert not output["folder"].startswith("/dev/shm/"), output
    finally:
        os.rmdir(shm)


SYSV = """
import ctypes

libc = ctypes.CDLL(None, use_errno=True)


def f(key):
    # IPC_CREAT | 0600: a segment no file system holds, and a queue.
    made = libc.shmget(key, 1 << 20, 0o1600) >= 0 and libc.msgget(key + 1, 0o1600) >= 0
    return "made" if made else "refused"
"""


@pytest.mark.skipif(not PRIVATE_SHM, reason="this user may neither mount nor make a user namespace")
@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_system_v_memory_and_queues_do_not_outlive_the_run(module: Path, isolation: str) -> None:
    """System V shared memory and message queues are held by no file: a 300 MiB
    segment outlived the run, and lent a later memory case a table it never paid for.
    The implementation's side has an IPC namespace of its own, gone with it."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x7E500000 + os.getpid() % 0xFFFF * 2
    (module / "sysv.py").write_text(SYSV, encoding="utf-8")
    (module / "evals.toml").write_text(
        probe_suite([("make", f"key = {key}")], expect='output = "made"'), encoding="utf-8"
    )
    run = run_suite(
        load_suite(module / "evals.toml"),
        RunOptions(impl="sysv:f", timeout=10.0, isolation=isolation),
    )
    assert [r.status for r in run.results] == [Status.PASS], [r.reason for r in run.results]
    left = [libc.shmget(key, 0, 0), libc.msgget(key + 1, 0)]
    if left[0] >= 0:  # never left to the next test (IPC_RMID)
        libc.shmctl(left[0], 0, None)
    if left[1] >= 0:
        libc.msgctl(left[1], 0, None)
    assert left == [-1, -1], "a System V object outlived the run"

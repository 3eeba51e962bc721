"""Memory held where no resident count sees it, and reads the sandbox must refuse.

A case's memory is what the kernel charges for it: a table kept in a ``memfd`` that
is written and never mapped, or in files under ``/dev/shm``, is RAM all the same, and
must not pass a bound it exceeds, whichever way the run measured (a cgroup of the
case's own, or the memory-backed files the case holds).

In the folders it is imported from, the implementation may read what it needs (its
modules and packages with their data, what the user names) and nothing else: not a
checkout's ``.git`` (where the committed suite sits), not the drafts, not an earlier
run's results, not a notes file; each refusal names the path and the option.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cer import sandbox
from cer.cli.main import main
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.sandbox import memory_cgroup
from cer.suite.loader import load_suite
from support import Module

PASS, FAIL, ERRORED = Status.PASS, Status.FAIL, Status.ERRORED

needs_sandbox = pytest.mark.skipif(
    not sandbox.status().available, reason="memory is measured only under the sandbox"
)
has_cgroup = isinstance(memory_cgroup.locate(), memory_cgroup.Controller)

HIDDEN = """
import os, mmap

def f(where):
    block = b"x" * (1 << 20)
    kept = []
    if where == "memfd":
        fd = os.memfd_create("table")
        for _ in range(160):
            os.write(fd, block)
        kept.append(fd)
    elif where == "shm":
        for index in range(4):
            path = f"/dev/shm/cer-hostile-{os.getpid()}-{index}"
            with open(path, "wb") as handle:
                for _ in range(40):
                    handle.write(block)
    elif where == "memfd-freed":
        fd = os.memfd_create("table")
        for _ in range(160):
            os.write(fd, block)
        os.close(fd)
    elif where == "anomaly":
        # A change the worker's check after each case sees: the worker once ended
        # right after answering, often before the supervisor read its memory.
        os.environ["CER_HOSTILE_CHANGED"] = "1"
    elif where in ("deep", "wide"):
        # A tree in /dev/shm once walked recursively: 1500 folders deep, the walk's
        # RecursionError ended cer with a traceback and no report.
        fd = os.open("/dev/shm", os.O_RDONLY)
        for index in range(1500 if where == "deep" else 20):
            name = "a" if where == "deep" else f"f{index}"
            if where == "deep":
                os.mkdir(name, dir_fd=fd)
                inner = os.open(name, os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = inner
            else:
                os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        os.close(fd)
    elif where in ("udp", "tcp"):
        import socket

        # Kept in the kernel's buffers of a socket, or handed to another process over
        # the network: memory no count of this process sees.
        kind = socket.SOCK_DGRAM if where == "udp" else socket.SOCK_STREAM
        kept.append(socket.socket(socket.AF_INET, kind))
    elif where == "unix":
        import socket

        kept.extend(socket.socketpair())  # its buffers are this process's, and counted
    globals()["kept"] = kept
    return {"output": 4}
"""


def _suite(*wheres: str) -> str:
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for where in wheres:
        parts.append(
            f'[[cases]]\nname = "{where}"\ncategory = "functional"\n'
            f'input = {{ where = "{where}" }}\n'
            "expect = { output = 4, resident_memory_mb_max = 100 }\n"
        )
    return "\n".join(parts)


def _run(module: Module, *wheres: str, **options: Any) -> RunResult:
    module.suite(_suite(*wheres))
    name = module.impl(textwrap.dedent(HIDDEN))
    return module.run(f"{name}:f", timeout=10.0, **options)


@pytest.fixture(autouse=True)
def _clean_shm() -> Any:
    yield
    for name in os.listdir("/dev/shm"):
        if name.startswith("cer-hostile-"):
            os.unlink(os.path.join("/dev/shm", name))


def _mb(result: RunResult, index: int) -> float:
    return float(result.results[index].observation["resident_memory_mb"])


@needs_sandbox
@pytest.mark.skipif(not has_cgroup, reason=f"no memory cgroup here: {memory_cgroup.locate()}")
def test_a_cgroup_of_its_own_counts_memfd_and_shm_memory(module: Module) -> None:
    result = _run(module, "none", "memfd", "shm", "memfd-freed")
    statuses = [r.status for r in result.results]
    assert statuses == [PASS, FAIL, FAIL, FAIL], [r.reason for r in result.results]
    for index in (1, 2, 3):
        assert _mb(result, index) > 150
        assert "expected resident_memory_mb <= 100" in (result.results[index].reason or "")
    assert result.conditions is not None
    assert result.conditions.memory.startswith("cgroup v")
    controller = memory_cgroup.locate()
    assert isinstance(controller, memory_cgroup.Controller)
    mine = f"cer-case-{os.getpid()}-"  # this process made them (other runs share the parent)
    assert not [name for name in os.listdir(controller.parent) if name.startswith(mine)]


@needs_sandbox
def test_without_a_cgroup_the_memory_backed_files_a_case_holds_are_counted(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(memory_cgroup.DISABLE_ENV, "1")
    result = _run(module, "none", "memfd", "shm")
    statuses = [r.status for r in result.results]
    assert statuses == [PASS, FAIL, FAIL], [r.reason for r in result.results]
    assert _mb(result, 1) > 150 and _mb(result, 2) > 150
    assert result.conditions is not None
    assert result.conditions.memory.startswith(
        "peak resident memory plus the memory-backed files the case holds (no cgroup: "
    )


def test_a_run_without_memory_cases_names_no_method(module: Module) -> None:
    module.suite(
        'commonsformat_evals = "0.2"\ntarget = "t"\n[[cases]]\nname = "a"\n'
        'category = "functional"\ninput = { where = "none" }\nexpect = { output = 4 }\n'
    )
    name = module.impl(textwrap.dedent(HIDDEN))
    result = module.run(f"{name}:f", timeout=10.0)
    assert result.conditions is not None and result.conditions.memory == ""


# --- reads in the folders the implementation is imported from ----------------------------

READER = """
import os

def f(path):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), path), "rb") as h:
        h.read(1)
    return "read"
"""

READS = {
    "git-object": ".git/objects/ab/cdef0123",
    "git-head": ".git/HEAD",
    "drafts": "evals.drafts.toml",
    "earlier-results": "results.json",
    "notes": "notes.txt",
    "hidden-folder": ".secrets/token",
    "module": "helper.py",
    "package-data": "pkg/table.json",
    "named-data": "data-files/table.csv",
}
ALLOWED = {"module", "package-data", "named-data"}


def _reads_suite() -> str:
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for name, path in READS.items():
        parts.append(
            f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
            f'input = {{ path = "{path}" }}\nexpect = {{ output = "read" }}\n'
        )
    return "\n".join(parts)


def _checkout(root: Path) -> None:
    for path in READS.values():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("[[cases]] expect = the answers\n", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "impl.py").write_text(READER, encoding="utf-8")
    (root / "evals.toml").write_text(_reads_suite(), encoding="utf-8")


@needs_sandbox
@pytest.mark.parametrize("where", ["suite-folder", "working-directory"])
def test_an_import_root_lends_only_what_an_implementation_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _checkout(root)
    if where == "working-directory":
        monkeypatch.chdir(root)
    # An earlier run wrote its results beside the module, where the user pointed it.
    code = main(
        [
            "run",
            str(root / "evals.toml"),
            "--impl",
            "impl:f",
            "-q",
            "-o",
            str(root / "results.json"),
            "--sandbox-read",
            str(root / "data-files"),
        ]
    )
    assert code == 1
    capsys.readouterr()
    assert (root / "results.json").stat().st_size > 100  # written by that run
    result = run_suite(
        load_suite(root / "evals.toml"),
        RunOptions(impl="impl:f", timeout=5.0, sandbox_read=(str(root / "data-files"),)),
    )
    by_name = {r.case_name: r for r in result.results}
    for name, path in READS.items():
        got = by_name[name]
        if name in ALLOWED:
            assert got.status is PASS, (name, got.reason)
            continue
        assert got.status is ERRORED, (name, got.status, got.reason)
        real = os.path.realpath(root / path)
        assert f"the sandbox denied access to {real}" in (got.reason or ""), got.reason
        if name == "drafts":  # cer's own: no option opens it
            assert "--sandbox-read" not in (got.reason or ""), got.reason
        else:
            assert f"--sandbox-read {real} or [tool.cer] sandbox_read" in (got.reason or ""), (
                got.reason
            )


@needs_sandbox
def test_a_path_the_user_names_is_lent_and_nothing_beside_it(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _checkout(root)
    result = run_suite(
        load_suite(root / "evals.toml"),
        RunOptions(impl="impl:f", timeout=5.0, sandbox_read=(str(root / "notes.txt"),)),
    )
    by_name = {r.case_name: r.status for r in result.results}
    assert by_name["notes"] is PASS
    assert by_name["drafts"] is ERRORED and by_name["git-object"] is ERRORED
    assert by_name["named-data"] is ERRORED  # not named this time


@needs_sandbox
def test_a_command_harness_may_read_beside_it_but_not_what_cer_keeps(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    _checkout(root)
    harness = root / "harness.py"
    harness.write_text(
        textwrap.dedent(
            """
            import json, os, sys
            here = os.path.dirname(os.path.abspath(__file__))
            for line in sys.stdin:
                request = json.loads(line)
                if request.get("op") == "start":
                    implementation = {"name": "reader", "version": "1"}
                    started = {"op": "started", "protocol": 1, "implementation": implementation}
                    print(json.dumps(started), flush=True)
                    continue
                if request.get("op") != "run":
                    continue
                path = request["case"]["input"]["value"]["path"]["value"]
                try:
                    open(os.path.join(here, path), "rb").close()
                    read = {"output": {"type": "string", "value": "read"}}
                    body = {"observation": {"type": "table", "value": read}}
                except OSError as exc:
                    body = {"error": {"type": "PermissionError", "message": str(exc)}}
                print(json.dumps({"op": "result", "seq": request["seq"], **body}), flush=True)
            """
        ),
        encoding="utf-8",
    )
    import shlex
    import sys

    result = run_suite(
        load_suite(root / "evals.toml"),
        RunOptions(
            impl=f"{shlex.quote(sys.executable)} {shlex.quote(str(harness))}",
            kind="command",
            timeout=5.0,
        ),
    )
    by_name = {r.case_name: r for r in result.results}
    for name in ("git-object", "git-head", "drafts"):
        assert by_name[name].status is not PASS, (name, by_name[name].reason)
    for name in ("notes", "module", "package-data", "named-data", "hidden-folder"):
        assert by_name[name].status is PASS, (name, by_name[name].reason)


WRITES_ITS_SCRATCH = """
import os, tempfile

def f(x):
    path = os.path.join(tempfile.gettempdir(), "mine")
    with open(path, "w") as handle:
        handle.write("written")
    os.remove(path)
    try:
        open("notes.txt").close()
    except (PermissionError, FileNotFoundError):
        return x  # the rest of the folder is still refused (or absent from its world)
    return -1
"""


@needs_sandbox
@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_module_in_the_temporary_folder_itself_keeps_its_scratch_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str
) -> None:
    """A suite and an implementation written straight into ``/tmp`` (a quick try): the
    run's scratch folder, made there too, is an entry no import takes, and was once
    left out of the import root with everything else, so every case errored with
    "the cases' scratch folder could not be made"."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    monkeypatch.chdir(temporary)
    (temporary / "scratch_impl.py").write_text(WRITES_ITS_SCRATCH, encoding="utf-8")
    (temporary / "evals.toml").write_text(
        'commonsformat_evals = "0.2"\ntarget = "t"\n\n[[cases]]\nname = "writes"\n'
        'category = "functional"\ninput = { x = 1 }\nexpect = { output = 1 }\n',
        encoding="utf-8",
    )
    (temporary / "notes.txt").write_text("not importable", encoding="utf-8")
    result = run_suite(
        load_suite(temporary / "evals.toml"),
        RunOptions(impl="scratch_impl:f", timeout=5.0, isolation=isolation),
    )
    (only,) = result.results
    assert only.status is PASS, only.reason
    assert not [name for name in os.listdir(temporary) if name.startswith("cer-scratch-")]


@needs_sandbox
@pytest.mark.parametrize("isolation", ["fork", "none"])
def test_a_case_whose_memory_is_measured_may_open_no_network_socket(
    module: Module, isolation: str
) -> None:
    """Data sent over a socket sits in kernel buffers that cgroup v1 does not charge, or
    in another process (a helper another worker of the run started): 300 MiB through
    UDP once passed ``resident_memory_mb_max = 100`` at 15 MiB. Such a case is errored;
    a Unix socket pair, whose buffers are counted, is not refused, and a case that does
    not ask about memory may open any socket."""
    module.suite(
        _suite("udp", "tcp", "unix") + '\n[[cases]]\nname = "plain"\ncategory = "functional"\n'
        'input = { where = "udp" }\nexpect = { output = 4 }\n'
    )
    name = module.impl(textwrap.dedent(HIDDEN))
    result = module.run(f"{name}:f", timeout=10.0, isolation=isolation)
    udp, tcp, unix, plain = result.results
    for refused in (udp, tcp):
        assert refused.status is ERRORED, (refused.case_name, refused.reason)
        why = refused.reason or ""
        assert why.startswith("could not verify resident_memory_mb: the case tried to start"), why
        assert "or to open a network socket" in why, why
    if has_cgroup:
        assert unix.status is PASS, unix.reason
    else:  # nothing counts a pair's buffers: no pipe or socket at all
        assert unix.status is ERRORED, unix.reason
        assert "or to make a pipe or socket" in (unix.reason or ""), unix.reason
    assert plain.status is PASS, plain.reason


BUFFERS = """
import fcntl
import os
import socket

KEEP = []


def f(where):
    total = 0
    while total < 120 << 20:
        try:
            if where == "pairs":
                ends = socket.socketpair()
                ends[0].setblocking(False)
                KEEP.append(ends)
                try:
                    while True:
                        total += ends[0].send(b"x" * 65536)
                except BlockingIOError:
                    pass
            else:
                read, write = os.pipe()
                KEEP.append((read, write))
                fcntl.fcntl(write, 1031, 1 << 20)  # F_SETPIPE_SZ
                os.set_blocking(write, False)
                try:
                    while True:
                        total += os.write(write, b"x" * 65536)
                except BlockingIOError:
                    pass
        except OSError:
            break  # out of descriptors: what is held so far
    return 4
"""


@needs_sandbox
def test_without_a_cgroup_a_case_may_hold_nothing_in_pipes_or_sockets(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a cgroup, 120 MiB and more held in the kernel's buffers of socket pairs
    or pipes passed ``resident_memory_mb_max = 50`` at 16 MiB: no resident figure counts
    them. Such a case may make no pipe and no socket; one that tries is errored."""
    monkeypatch.setenv(memory_cgroup.DISABLE_ENV, "1")
    module.suite(
        'commonsformat_evals = "0.2"\ntarget = "t"\n'
        + "".join(
            f'[[cases]]\nname = "{where}"\ncategory = "functional"\n'
            f'input = {{ where = "{where}" }}\n'
            "expect = { output = 4, resident_memory_mb_max = 50 }\n"
            for where in ("pairs", "pipes")
        )
    )
    name = module.impl(textwrap.dedent(BUFFERS))
    result = module.run(f"{name}:f", timeout=20.0)
    for case in result.results:
        assert case.status is ERRORED, (case.case_name, case.status, case.observation)
        assert "or to make a pipe or socket, whose kernel buffers only a memory cgroup" in (
            case.reason or ""
        ), case.reason


@needs_sandbox
def test_a_tree_in_dev_shm_of_any_shape_is_walked_or_said_to_be_too_large(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(memory_cgroup.DISABLE_ENV, "1")
    monkeypatch.setattr(memory_cgroup, "SHM_ENTRIES_MAX", 1600)
    result = _run(module, "deep", "wide", "none")
    deep, wide, after = result.results
    assert deep.status is PASS, deep.reason
    assert after.status is PASS, after.reason
    monkeypatch.setattr(memory_cgroup, "SHM_ENTRIES_MAX", 10)
    deep, wide, after = _run(module, "deep", "wide", "none").results
    for large in (deep, wide):
        assert large.status is ERRORED, (large.case_name, large.reason)
        assert "could not verify resident_memory_mb" in (large.reason or "")
        assert "too large to walk" in (large.reason or "")
    assert after.status is PASS, after.reason


@needs_sandbox
def test_a_case_that_changes_its_worker_still_has_its_memory_measured(module: Module) -> None:
    """A case that changes its worker (here an environment variable) once had its
    worker end right after its answer, so that the supervisor often found no memory to
    read, and the same case passed or errored from one run to the next."""
    head, case = _suite("anomaly").split("[[cases]]")
    module.suite(
        head
        + "".join(
            f"[[cases]]{case}".replace('"anomaly"\ncategory', f'"anomaly-{index}"\ncategory')
            for index in range(6)
        )
    )
    result = module.run(f"{module.impl(textwrap.dedent(HIDDEN))}:f", timeout=10.0)
    assert len(result.results) == 6
    for case in result.results:
        assert case.status is PASS, case.reason
        assert 1 < case.observation["resident_memory_mb"] < 100


@needs_sandbox
def test_without_a_cgroup_a_memory_backed_scratch_folder_leaves_memory_unverified(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a cgroup, 300 MiB written to a file in a ``TMPDIR`` on tmpfs passed a
    100 MiB bound: the worker empties the folder before it answers, so nothing counted
    it. Such a run cannot verify a memory bound."""
    assert memory_cgroup.memory_backed("/proc") is False
    if os.path.isdir("/dev/shm"):
        assert memory_cgroup.memory_backed("/dev/shm") is True
    monkeypatch.setenv(memory_cgroup.DISABLE_ENV, "1")
    monkeypatch.setattr(memory_cgroup, "memory_backed", lambda path: True)
    (case,) = _run(module, "none").results
    assert case.status is ERRORED, case.reason
    assert (case.reason or "").startswith(
        "could not verify resident_memory_mb: the cases' scratch folder (TMPDIR) is on a "
        "memory-backed file system"
    ), case.reason


@needs_sandbox
def test_a_run_that_cannot_record_its_outputs_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record of the files cer wrote keeps a later run's implementation from an
    earlier run's results (every failed case's expected value). With the state folder
    unusable (``XDG_STATE_HOME=/proc/…``) it was silently not kept."""
    from cer.sandbox import readset

    monkeypatch.setenv(readset.OUTPUTS_ENV, "/proc/cer-cannot-write/outputs")
    root = tmp_path / "proj"
    root.mkdir()
    _checkout(root)
    result = run_suite(
        load_suite(root / "evals.toml"),
        RunOptions(impl="impl:f", timeout=5.0, protected=(str(root / "results.json"),)),
    )
    (note,) = [n for n in result.notes if "could not add the files this run writes" in n]
    assert "/proc/cer-cannot-write/outputs" in note and "XDG_STATE_HOME" in note, note


@needs_sandbox
def test_from_the_home_folder_only_regular_packages_are_lent_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from ``/`` (a container's working directory) or the home folder, every
    folder named like an identifier was lent whole as a namespace package: another
    project's suite under /work, ~/.ssh under /root. From there a folder is lent only
    when it is a regular package."""
    home = tmp_path / "home"
    for folder in ("pkg", "notes", "ssh_keys"):
        (home / folder).mkdir(parents=True)
    (home / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (home / "pkg" / "table.json").write_text("{}", encoding="utf-8")
    (home / "notes" / "suite.toml").write_text("the answers", encoding="utf-8")
    (home / "ssh_keys" / "id_rsa").write_text("SECRET", encoding="utf-8")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "impl.py").write_text(
        READER.replace("os.path.dirname(os.path.abspath(__file__))", repr(str(home))),
        encoding="utf-8",
    )
    reads = {
        "package": "pkg/table.json",
        "namespace": "notes/suite.toml",
        "keys": "ssh_keys/id_rsa",
    }
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for name, path in reads.items():
        parts.append(
            f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
            f'input = {{ path = "{path}" }}\nexpect = {{ output = "read" }}\n'
        )
    (suite / "evals.toml").write_text("\n".join(parts), encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    result = run_suite(load_suite(suite / "evals.toml"), RunOptions(impl="impl:f", timeout=5.0))
    by_name = {r.case_name: r for r in result.results}
    assert by_name["package"].status is PASS, by_name["package"].reason
    for name in ("namespace", "keys"):
        assert by_name[name].status is ERRORED, (name, by_name[name].reason)
        assert "the sandbox denied access" in (by_name[name].reason or "")

"""Root keeps no privilege, and the calls Landlock has no rule for are refused.

Run as root (every CI container), an implementation once kept every capability: it made
a block-device node in its scratch folder and read the suite off the raw disk, slowed
the clock with ``adjtimex`` so that its time measured less, marked a scratch file
immutable so that cleanup left it; and ``prlimit`` on the supervisor (no root needed)
set the supervisor's CPU limit so that the kernel killed it mid-run. Each attack here
runs from inside a case of a Python implementation (both isolation modes), a command
harness and a per-case command. Each probe returns what the kernel answered, so the
tests assert the refusal itself; with ``--sandbox off`` the same probes succeed (or
fail otherwise than by a refusal), which shows that each is real.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from cer import sandbox
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.sandbox import landlock, seccomp
from cer.suite.loader import load_suite

pytestmark = pytest.mark.skipif(
    not sandbox.status().available, reason="this kernel has no Landlock"
)

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "examples" / "harnesses" / "calc_harness.py"
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: only root has capabilities")
KNOWN_MACHINE = seccomp.program() is not None

PROBE = r"""
import ctypes
import errno
import os
import resource
import stat
import struct
import tempfile

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
X86 = os.uname().machine == "x86_64"


def _answer(result):
    if result == -1:
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    return "ok"


def _call(number, *args):
    return _answer(libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args]))


# Arguments the kernel refuses for another reason than permission (or that change
# nothing), so that an unfiltered call is harmless and answers otherwise than EPERM.
CALLS = {
    "ptrace": ((101, 117), (0x7FFF, 0, 0, 0)),
    "process_vm_readv": ((310, 270), (0, 0, 0, 0, 0, 0)),
    "process_vm_writev": ((311, 271), (0, 0, 0, 0, 0, 0)),
    "kcmp": ((312, 272), (0, 0, 99, 0, 0)),
    "mknodat": ((259, 33), (-100, 0, 0, 0)),
    "add_key": ((248, 217), (0, 0, 0, 0, 0)),
    "request_key": ((249, 218), (0, 0, 0, 0)),
    "keyctl": ((250, 219), (0x7FFF, 0, 0, 0, 0)),
    "perf_event_open": ((298, 241), (0, 0, 0, 0, 0)),
    "bpf": ((321, 280), (0x7FFF, 0, 0)),
    "open_by_handle_at": ((304, 265), (-1, 0, 0)),
    "unshare": ((272, 97), (0,)),
    "setns": ((308, 268), (-1, 0)),
    "mount": ((165, 40), (0, 0, 0, 0, 0)),
    "umount2": ((166, 39), (0, 0)),
    "pivot_root": ((155, 41), (0, 0)),
    "open_tree": ((428, 428), (-1, 0, 0)),
    "move_mount": ((429, 429), (-1, 0, -1, 0, 0)),
    "fsopen": ((430, 430), (0, 0)),
    "fsconfig": ((431, 431), (-1, 0, 0, 0, 0)),
    "fsmount": ((432, 432), (-1, 0, 0)),
    "fspick": ((433, 433), (-1, 0, 0)),
    "mount_setattr": ((442, 442), (-1, 0, 0, 0, 0)),
    "clock_settime": ((227, 112), (0x7FFF, 0)),
    "settimeofday": ((164, 170), (0, 0)),
    "adjtimex": ((159, 171), (0,)),
    "clock_adjtime": ((305, 266), (0x7FFF, 0)),
    # CLONE_NEWNS with CLONE_FS: a combination the kernel refuses (EINVAL) unfiltered.
    "clone-newns": ((56, 220), (0x00020000 | 0x200, 0, 0, 0, 0)),
}


def attack(kind, name="", pid=0):
    if kind == "status":
        fields = {}
        with open("/proc/self/status") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        return " ".join(
            f"{key}={fields.get(key)}"
            for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
        )
    if kind == "syscall":
        numbers, args = CALLS[name]
        return _call(numbers[0] if X86 else numbers[1], *args)
    if kind == "mknod":
        path = os.path.join(tempfile.gettempdir(), f"node-{name}")
        mode = (stat.S_IFBLK if name == "block" else stat.S_IFCHR) | 0o600
        try:
            os.mknod(path, mode, os.makedev(1, 3))
        except OSError as exc:
            return errno.errorcode[exc.errno]
        os.unlink(path)
        return "ok"
    if kind == "immutable":
        import fcntl

        path = os.path.join(tempfile.gettempdir(), "stuck")
        with open(path, "w") as handle:
            try:
                fcntl.ioctl(handle, 0x40086602, struct.pack("l", 0x10))  # FS_IOC_SETFLAGS, +i
            except OSError as exc:
                return errno.errorcode[exc.errno]
            fcntl.ioctl(handle, 0x40086602, struct.pack("l", 0))
        return "ok"
    if kind == "prlimit-other":
        try:
            resource.prlimit(pid, resource.RLIMIT_CPU)  # only reads: harmless unfiltered
        except OSError as exc:
            return errno.errorcode[exc.errno]
        return "ok"
    if kind == "prlimit-self":
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        resource.prlimit(0, resource.RLIMIT_NOFILE, (soft, hard))
        return "ok"
    if kind == "clone3":
        return _call(435, 0, 0)
    if kind == "x32":
        return _call(0x40000000 + 39, 0) if X86 else "EPERM"  # x32's getpid
    raise ValueError(kind)
"""

SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "mknodat",
    "add_key",
    "request_key",
    "keyctl",
    "perf_event_open",
    "bpf",
    "open_by_handle_at",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "clock_settime",
    "settimeofday",
    "adjtimex",
    "clock_adjtime",
    "clone-newns",
)
DROPPED = (
    "CapInh=0000000000000000 CapPrm=0000000000000000 CapEff=0000000000000000 "
    "CapBnd=0000000000000000 CapAmb=0000000000000000 NoNewPrivs=1 Seccomp=2"
)

KINDS = [
    pytest.param("python", "fork", id="python-fork"),
    pytest.param("python", "none", id="python-none"),
    pytest.param("command", "fork", id="harness"),
    pytest.param("command-per-case", "fork", id="per-case"),
]


def _write_module(root: Path, cases: list[tuple[str, dict[str, Any], str]]) -> None:
    (root / "probe.py").write_text(PROBE, encoding="utf-8")
    lines = ['commonsformat_evals = "0.2"', 'target = "probe"', ""]
    for name, fields, expected in cases:
        table = ", ".join(f"{key} = {value!r}" for key, value in fields.items())
        table = table.replace("'", '"')
        lines += [
            "[[cases]]",
            f'name = "{name}"',
            'category = "functional"',
            f"input = {{ {table} }}",
            f'expect = {{ output = "{expected}" }}',
            "",
        ]
    (root / "evals.toml").write_text("\n".join(lines), encoding="utf-8")


def _run(root: Path, kind: str, **options: Any) -> dict[str, Any]:
    impl = {
        "python": "probe:attack",
        "command": f"{sys.executable} {HARNESS} --module probe.py --function attack",
        "command-per-case": f"{sys.executable} {HARNESS} --per-case "
        "--module probe.py --function attack",
    }[kind]
    options.setdefault("timeout", 10.0)
    run: RunResult = run_suite(
        load_suite(root / "evals.toml"), RunOptions(impl=impl, kind=kind, **options)
    )
    return {result.case_name: result for result in run.results}


def _observed(result: Any) -> Any:
    return (result.observation or {}).get("output"), result.reason


def _cases() -> list[tuple[str, dict[str, Any], str]]:
    pid = os.getpid()
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("status", {"kind": "status"}, DROPPED),
        ("mknod-block", {"kind": "mknod", "name": "block"}, "EPERM"),
        ("mknod-char", {"kind": "mknod", "name": "char"}, "EPERM"),
        ("immutable", {"kind": "immutable"}, "EPERM"),
        ("prlimit-supervisor", {"kind": "prlimit-other", "pid": pid}, "EPERM"),
        ("prlimit-self", {"kind": "prlimit-self"}, "ok"),
        ("clone3", {"kind": "clone3"}, "ENOSYS"),
        ("x32", {"kind": "x32"}, "EPERM"),
    ]
    cases += [(name, {"kind": "syscall", "name": name}, "EPERM") for name in SYSCALLS]
    return cases


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the harness names probe.py relative to here
    _write_module(tmp_path, _cases())
    return tmp_path


CAPABILITIES = ("status", "mknod-block", "mknod-char", "immutable")
"""The cases of what only capabilities allow: root's, checked without the seccomp
filter's help wherever root runs the tests, also where no filter is written."""


@pytest.mark.skipif(
    not IS_ROOT and not KNOWN_MACHINE,
    reason="no seccomp filter is written for this machine, and no capability to drop",
)
@pytest.mark.parametrize(("kind", "isolation"), KINDS)
def test_every_call_is_refused_inside_a_case(module: Path, kind: str, isolation: str) -> None:
    """The calls the seccomp filter refuses are refused, and root keeps no capability
    inside a case (its status line shows none, it makes no device, it marks no file
    immutable): one run of every probe for both, which are each checked where they
    apply (the calls where a filter is written, the capabilities as root)."""
    results = _run(module, kind, isolation=isolation)
    checked = [
        name for name, _, _ in _cases() if (IS_ROOT if name in CAPABILITIES else KNOWN_MACHINE)
    ]
    assert checked
    for name in checked:
        result = results[name]
        assert result.status is Status.PASS, (name, *_observed(result))


@needs_root
def test_the_probes_are_real_without_the_sandbox(module: Path) -> None:
    """With the sandbox off, root keeps its capabilities and every call goes through to
    the kernel, which answers otherwise than EPERM: each probe tests what it claims to."""
    results = _run(module, "python", sandbox="off")
    status = _observed(results["status"])[0]
    assert "CapEff=0000000000000000" not in status and "Seccomp=0" in status, status
    assert _observed(results["mknod-char"])[0] == "ok"
    assert _observed(results["immutable"])[0] in ("ok", "ENOTTY", "EOPNOTSUPP")
    assert _observed(results["prlimit-supervisor"])[0] == "ok"
    for name in SYSCALLS:
        assert _observed(results[name])[0] != "EPERM", (name, _observed(results[name]))


def _in_child(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@needs_root
def test_no_writable_rule_allows_making_a_device(tmp_path: Path) -> None:
    """Landlock alone (capabilities kept, no seccomp filter): the run's write rules and
    the case's nested layer both refuse device nodes where files may be written."""
    version = sandbox.status().abi
    done = _in_child(
        f"""
        import os, stat
        from cer.sandbox import landlock
        landlock.restrict({version}, ["/usr", "/lib", "/lib64", "/etc"], [{str(tmp_path)!r}],
                          [], deny_network=False)
        for kind in (stat.S_IFCHR, stat.S_IFBLK):
            try:
                os.mknod({str(tmp_path)!r} + f"/dev-{{kind}}", kind | 0o600, os.makedev(1, 3))
                print("made")
            except PermissionError:
                print("refused")
        os.mkfifo({str(tmp_path / "fifo")!r})
        print("fifo")
        """
    )
    assert done.stdout.split() == ["refused", "refused", "fifo"], done.stderr
    assert landlock.MAKE_DEVICE == landlock.FS_MAKE_CHAR | landlock.FS_MAKE_BLOCK


@needs_root
def test_the_case_layer_refuses_devices_by_itself(tmp_path: Path) -> None:
    version = sandbox.status().abi
    done = _in_child(
        f"""
        import os, stat
        from cer.sandbox import landlock
        landlock.nest({version})
        try:
            os.mknod({str(tmp_path / "null")!r}, stat.S_IFCHR | 0o600, os.makedev(1, 3))
            print("made")
        except PermissionError:
            print("refused")
        """
    )
    assert done.stdout.split() == ["refused"], done.stderr


@pytest.mark.skipif(not KNOWN_MACHINE, reason="no seccomp filter is written for this machine")
def test_the_filter_alone_refuses_each_call(tmp_path: Path) -> None:
    """The filter by itself, in a process that keeps whatever it holds: each call answers
    EPERM where, unfiltered, the kernel refuses its arguments otherwise (or, for
    ``unshare(0)`` and ``settimeofday(NULL, NULL)``, does nothing)."""
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    names = ", ".join(repr(name) for name in SYSCALLS)
    done = _in_child(
        f"""
        import ctypes, os, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import probe
        from cer.sandbox import seccomp
        before = {{name: probe.attack("syscall", name) for name in ({names},)}}
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(38, 1, 0, 0, 0)
        assert seccomp.install() is None
        after = {{name: probe.attack("syscall", name) for name in ({names},)}}
        for name in before:
            print(name, before[name], after[name])
        print("prlimit-self", probe.attack("prlimit-self"))
        print("prlimit-parent", probe.attack("prlimit-other", pid=os.getppid()))
        print("clone3", probe.attack("clone3"))
        print("fork", os.waitpid(os.fork() or os._exit(0), 0)[1] if True else 0)
        """
    )
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}
    for name in SYSCALLS:
        before, after = lines[name]
        assert after == "EPERM", (name, before, after)
        if IS_ROOT:
            assert before != "EPERM", (name, before)
    assert lines["prlimit-self"] == ["ok"]
    assert lines["prlimit-parent"] == ["EPERM"]
    assert lines["clone3"] == ["ENOSYS"]
    assert lines["fork"] == ["0"]


def test_the_filter_is_refused_without_no_new_privs_or_privilege() -> None:
    """Installing needs no_new_privs (or CAP_SYS_ADMIN): the reason says so rather than
    the filter being silently absent."""
    if IS_ROOT or not KNOWN_MACHINE:
        pytest.skip("root may install a filter without no_new_privs")
    done = _in_child("from cer.sandbox import seccomp; print(seccomp.install())")
    assert "refused" in done.stdout


def test_the_filter_exists_for_both_machines() -> None:
    for machine in ("x86_64", "aarch64"):
        code = seccomp.program(machine)
        assert code is not None and len(code) % 8 == 0
        assert len(code) // 8 < 4096  # the kernel's BPF_MAXINSNS
    assert seccomp.program("riscv64") is None


LOWER_LIMIT = """
import os
import resource


def attack(pid, lower=True):
    soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    if not lower:  # the next case: what it finds
        return soft
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (4096, hard))
    return "lowered"
"""


def test_the_supervisor_sets_its_own_limits_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the filter (``--sandbox off``), a case lowers cer's file-size limit, so
    that the report and the history could not be written: cer sets it back after the
    case, before the next one (which finds it as it was), and the run says so. The
    supervisor is made slow to judge, so that a next case handed over before the limits
    are checked would find the lowered one."""
    import resource

    from cer.engine.python import pool

    decode = pool.outcome_from_worker

    def slow_decode(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)
        return decode(*args, **kwargs)

    monkeypatch.setattr(pool, "outcome_from_worker", slow_decode)

    before = resource.getrlimit(resource.RLIMIT_FSIZE)
    (tmp_path / "lower.py").write_text(LOWER_LIMIT, encoding="utf-8")
    (tmp_path / "evals.toml").write_text(
        'commonsformat_evals = "0.2"\ntarget = "lower"\n\n'
        f'[[cases]]\nname = "lower"\ncategory = "functional"\n'
        f'input = {{ pid = {os.getpid()} }}\nexpect = {{ output = "lowered" }}\n\n'
        f'[[cases]]\nname = "next"\ncategory = "functional"\n'
        f"input = {{ pid = {os.getpid()}, lower = false }}\nexpect = {{ output = {before[0]} }}\n",
        encoding="utf-8",
    )
    try:
        run = run_suite(
            load_suite(tmp_path / "evals.toml"),
            RunOptions(impl="lower:attack", sandbox="off", timeout=10.0, jobs=1),
        )
        after = resource.getrlimit(resource.RLIMIT_FSIZE)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, before)
    assert [r.status for r in run.results] == [Status.PASS] * 2, [r.reason for r in run.results]
    assert after == before
    assert any("RLIMIT_FSIZE" in note and "set back" in note for note in run.notes), run.notes


def test_a_limit_that_cannot_be_set_back_stops_the_run() -> None:
    done = _in_child(
        """
        import resource
        from cer.sandbox import privileges
        from cer.engine.limits import LimitsChanged, OwnLimits
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        limits = OwnLimits()
        privileges.drop()  # as root: no CAP_SYS_RESOURCE to raise a hard limit again
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        try:
            limits.restore()
        except LimitsChanged as exc:
            print(exc)
        """
    )
    assert "cer's own resource limit RLIMIT_CORE was changed during the run" in done.stdout, (
        done.stdout,
        done.stderr,
    )
    assert "the run is stopped" in done.stdout

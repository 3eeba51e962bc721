"""A user who may not mount gets a ``/dev/shm`` of its own too, through a user namespace.

Run as root, the sandbox mounts a fresh ``tmpfs`` on ``/dev/shm`` in a mount namespace
of the implementation's own. Run as any other user it could not, so the implementation
shared the machine's ``/dev/shm``: it saw what other programs kept there, and what it
left there outlived the run. Now such a user first makes a user namespace of its own
(only its own user and group mapped, to themselves) where the kernel allows it.

The run here is a real one, made as the user ``nobody`` (uid 65534, switched to through
``setpriv``, so root is needed), with a suite in a folder that user owns: cases that list
``/dev/shm`` and leave a file and a symbolic link there, read their capability sets and
their user map, try to make another namespace or a mount, and leave memory in
``/dev/shm`` for the memory count to find. Then the refusals: where no user namespace
can be made (the sysctl, a process that is not dumpable, root without the capabilities,
a seccomp filter), :func:`cer.sandbox.privileges.private_shm` says so and the process
is left as it was, in its namespaces, with its ids.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cer
from cer import sandbox
from cer.sandbox import seccomp
from support import probe_suite

pytestmark = pytest.mark.skipif(
    not sandbox.status().available, reason="this kernel has no Landlock"
)

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "examples" / "harnesses" / "calc_harness.py"
NOBODY = 65534
SETPRIV = shutil.which("setpriv")
KNOWN_MACHINE = seccomp.program() is not None
PYTHONPATH = os.pathsep.join(
    [str(Path(cer.__file__).resolve().parents[1]), *site.getsitepackages()]
)

PROBE = r"""
import ctypes
import errno
import os
import tempfile

libc = ctypes.CDLL(None, use_errno=True)


def _answer(result):
    return "ok" if result == 0 else errno.errorcode.get(ctypes.get_errno(), "?")


def attack(kind, mark=""):
    if kind == "shm":
        found = sorted(os.listdir("/dev/shm"))
        with open(f"/dev/shm/{mark}", "wb") as handle:
            handle.write(b"x" * 65536)
        os.symlink("/etc/passwd", f"/dev/shm/{mark}-link")
        return found
    if kind == "status":
        fields = {}
        with open("/proc/self/status") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        with open("/proc/self/uid_map") as handle:
            uid_map = " ".join(handle.read().split())
        keys = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
        return {"status": {key: fields.get(key) for key in keys}, "uid_map": uid_map,
                "uid": os.getuid(), "owner": os.stat(tempfile.gettempdir()).st_uid}
    if kind == "escape":
        return {
            "user": _answer(libc.unshare(0x10000000)),
            "mount-namespace": _answer(libc.unshare(0x00020000)),
            "mount": _answer(libc.mount(b"tmpfs", tempfile.gettempdir().encode(),
                                        b"tmpfs", 0, None)),
        }
    if kind == "memory":  # 24 MiB that no resident count sees
        with open(f"/dev/shm/{mark}", "wb") as handle:
            for _ in range(24):
                handle.write(b"x" * (1 << 20))
        return {"output": 4}
    raise ValueError(kind)
"""

DRIVER = r"""
import json
import sys

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.suite.loader import load_suite

harness = sys.argv[1]
impls = {
    "python": "probe:attack",
    "command": f"{sys.executable} {harness} --module probe.py --function attack",
    "command-per-case": f"{sys.executable} {harness} --per-case "
    "--module probe.py --function attack",
}
found = {}
for name, suite, kind, isolation in (
    ("python-fork", "evals.toml", "python", "fork"),
    ("python-none", "evals.toml", "python", "none"),
    ("harness", "evals.toml", "command", "fork"),
    ("per-case", "evals.toml", "command-per-case", "fork"),
    ("memory", "memory.toml", "python", "fork"),
):
    run = run_suite(
        load_suite(suite),
        RunOptions(impl=impls[kind], kind=kind, isolation=isolation, timeout=10.0),
    )
    found[name] = {
        "cases": {
            result.case_name: {
                "status": result.status.value,
                "observation": dict(result.observation or {}),
                "reason": result.reason,
            }
            for result in run.results
        },
        "memory": run.conditions.memory if run.conditions is not None else None,
    }
print("RESULT " + json.dumps(found))
"""

RUNS = ("python-fork", "python-none", "harness", "per-case")


def _as_nobody(python: str, *args: str, cwd: str = "/") -> subprocess.CompletedProcess[str]:
    assert SETPRIV is not None
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    environment.update(PYTHONPATH=PYTHONPATH, HOME=cwd, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", python, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


CAN_RUN = """
import subprocess, sys
import cer.engine.runner
subprocess.run([sys.executable, "-c", "import cer.worker.main"], check=True)
"""
"""What the run needs of its interpreter: cer imported, and itself started again by
its own name (as the run starts its workers)."""


KERNEL_ALLOWS = """
import ctypes, os
libc = ctypes.CDLL(None)
uid, gid = os.geteuid(), os.getegid()
done = libc.unshare(0x10000000 | 0x00020000) == 0
maps = (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1"))
for name, text in maps:
    try:
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    except OSError:
        done = False
print(done and libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", 0, None) == 0)
"""
"""Whether the kernel lets the user nobody make what the sandbox makes, asked without
cer's code: a fallback that no longer works fails these tests, it does not skip them."""


def _interpreter() -> tuple[str | None, str]:
    """A Python the user nobody can run and import cer with (this one, else one of the
    same version on the system's own path: a virtual environment under a folder only
    root may enter is not), or why there is none."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"]
    why = ""
    for python in dict.fromkeys(candidates):
        if not os.path.exists(python):
            continue
        done = _as_nobody(python, "-c", CAN_RUN)
        if done.returncode == 0:
            return python, ""
        why = f"{python}: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    return None, why or "no interpreter found"


@pytest.fixture(scope="module")
def as_nobody() -> Iterator[dict[str, Any]]:
    """The runs of the driver, made once as the user nobody, and the marks it used."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to run cer as another user (nobody)")
    if SETPRIV is None:
        pytest.skip("needs setpriv, to run cer as another user (nobody)")
    python, why = _interpreter()
    if python is None:
        pytest.skip(f"the user nobody cannot run cer from this environment ({why})")
    if _as_nobody(python, "-c", KERNEL_ALLOWS).stdout.strip() != "True":
        pytest.skip("this kernel refuses the user nobody a user namespace or a mount in it")
    folder = tempfile.mkdtemp(prefix="cer-shm-user-", dir="/tmp")
    mark = f"cer-user-shm-{os.getpid()}"
    outside = Path("/dev/shm") / f"{mark}-outside"
    outside.write_bytes(b"the machine's own")
    try:
        root = Path(folder)
        (root / "probe.py").write_text(PROBE, encoding="utf-8")
        (root / "driver.py").write_text(DRIVER, encoding="utf-8")
        cases = [
            ("shm", f'kind = "shm", mark = "{mark}"'),
            ("status", 'kind = "status"'),
            ("escape", 'kind = "escape"'),
        ]
        (root / "evals.toml").write_text(probe_suite(cases), encoding="utf-8")
        memory = [("memory", f'kind = "memory", mark = "{mark}-memory"')]
        (root / "memory.toml").write_text(
            probe_suite(memory, "output = 4, resident_memory_mb_max = 10"), encoding="utf-8"
        )
        for path in (root, *root.iterdir()):
            os.chown(path, NOBODY, NOBODY)
        done = _as_nobody(python, "driver.py", str(HARNESS), cwd=folder)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        assert done.returncode == 0 and lines, (done.stdout[-2000:], done.stderr[-4000:])
        machine = sorted(name for name in os.listdir("/dev/shm") if name.startswith(mark))
        outside_now = outside.read_bytes()
        yield {
            "runs": json.loads(lines[-1].removeprefix("RESULT ")),
            "mark": mark,
            "machine": machine,
            "outside": outside_now,
        }
    finally:
        outside.unlink()
        for name in os.listdir("/dev/shm"):  # what a broken fallback left behind
            if name.startswith(mark):
                os.unlink(os.path.join("/dev/shm", name))
        shutil.rmtree(folder, ignore_errors=True)


def _case(found: dict[str, Any], run: str, case: str) -> dict[str, Any]:
    result: dict[str, Any] = found["runs"][run]["cases"][case]
    assert result["status"] == "fail", (run, case, result)  # answered, never errored
    observation: dict[str, Any] = result["observation"]
    return observation


def _output(found: dict[str, Any], run: str, case: str) -> Any:
    observation = _case(found, run, case)
    return observation.get("output", observation)  # a returned table is the whole


@pytest.mark.parametrize("run", RUNS)
def test_a_user_who_may_not_mount_gets_an_empty_dev_shm_that_goes_with_the_run(
    as_nobody: dict[str, Any], run: str
) -> None:
    assert _output(as_nobody, run, "shm") == []  # not even the machine's file
    assert as_nobody["machine"] == [f"{as_nobody['mark']}-outside"]  # nothing left
    assert as_nobody["outside"] == b"the machine's own"


@pytest.mark.parametrize("run", RUNS)
def test_the_user_namespace_leaves_no_capability_and_the_ids_as_they_were(
    as_nobody: dict[str, Any], run: str
) -> None:
    found = _output(as_nobody, run, "status")
    assert found["uid_map"] == f"{NOBODY} {NOBODY} 1", found  # in a namespace of its own
    zero = "0000000000000000"
    expected = {"CapInh": zero, "CapPrm": zero, "CapEff": zero, "CapBnd": zero}
    assert found["status"] | expected == found["status"], found
    assert found["status"]["CapAmb"] == zero and found["status"]["NoNewPrivs"] == "1"
    assert found["status"]["Seccomp"] == ("2" if KNOWN_MACHINE else "0")
    assert found["uid"] == NOBODY and found["owner"] == NOBODY  # its scratch folder's


@pytest.mark.parametrize("run", RUNS)
def test_from_the_user_namespace_no_other_namespace_or_mount_is_made(
    as_nobody: dict[str, Any], run: str
) -> None:
    found = _output(as_nobody, run, "escape")
    assert found["mount"] == "EPERM" and found["mount-namespace"] == "EPERM", found
    if KNOWN_MACHINE:  # without the filter, any user may make a user namespace
        assert found["user"] == "EPERM", found


def test_memory_left_in_the_private_dev_shm_is_still_counted(as_nobody: dict[str, Any]) -> None:
    """The supervisor, outside the namespace, still reads the worker's ``/dev/shm``
    through ``/proc`` (or its cgroup, where the user may make one), and names how."""
    observation = _case(as_nobody, "memory", "memory")
    assert observation["resident_memory_mb"] > 24, observation
    method = as_nobody["runs"]["memory"]["memory"]
    assert method.startswith(("cgroup v", "peak resident memory plus")), method


# --------------------------------------------------------------------------- refused


REFUSE = {
    # A user namespace of the test's own in which no other may be made: the sysctl set
    # to 0 there, as an administrator sets it for the whole machine.
    "sysctl": """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.geteuid(), os.getegid()
        assert libc.unshare(0x10000000) == 0, "no user namespace here"
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                           ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
        with open("/proc/sys/user/max_user_namespaces", "w") as handle:
            handle.write("0")
    """,
    # Its /proc/self files belong to root: no map could be written.
    "not-dumpable": """
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    """,
    # cer's own filter, as a container's refuses unshare.
    "seccomp": "",
}


@pytest.mark.parametrize(
    "how", [*REFUSE, "root-without-capabilities", "root-without-capabilities-unchecked"]
)
def test_where_no_user_namespace_can_be_made_nothing_changes(how: str) -> None:
    """Without the privilege to mount and without a user namespace, :func:`private_shm`
    answers False and leaves the process in the namespaces it had, with its ids and
    the machine's ``/dev/shm``. Root without capabilities gets a user namespace from
    the kernel, which then refuses to map uid 0: the trial made in a child process
    keeps the process itself out of it, even were the checks made before it to miss
    the refusal (as they miss what a security module refuses)."""
    if how.startswith("root-without-capabilities") and os.geteuid() != 0:
        pytest.skip("needs root: the kernel refuses root's map for want of a capability")
    if how == "seccomp" and not KNOWN_MACHINE:
        pytest.skip("no seccomp filter is written for this machine")
    mark = f"cer-refused-shm-{os.getpid()}-{how}"
    outside = Path("/dev/shm") / mark
    outside.write_bytes(b"x")
    code = textwrap.dedent(REFUSE.get(how, "")) + textwrap.dedent(f"""
        import json, os
        from cer.sandbox import privileges, seccomp
        def seen():
            return [os.readlink(f"/proc/self/ns/{{name}}") for name in ("user", "mnt")] + [
                os.getuid(), os.getgid(), {mark!r} in os.listdir("/dev/shm")]
        before = seen()
        assert privileges.drop() is None
        if {how!r} == "root-without-capabilities-unchecked":
            privileges._may_map = lambda libc: True
        if {how!r} == "seccomp":
            assert seccomp.install(seccomp.program()) is None
        print(json.dumps([privileges.private_shm(), before, seen()]))
    """)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False
        )
    finally:
        outside.unlink()
    assert done.returncode == 0, done.stderr
    answered, before, after = json.loads(done.stdout)
    assert answered is False
    assert after == before and before[-1] is True, (before, after)

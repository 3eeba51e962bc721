"""The sandbox's hostile battery: implementations that try to get out of it.

Each case of one suite is an attack that, where it works, makes the case pass: reading
the expectation out of the suite or ``commonsformat.md``, writing the history database
or a report, writing beside the suite, signalling or tracing the runner's processes,
reading their descriptors through ``/proc``, reaching a TCP listener with
``--network deny``. The same attacks run from a Python implementation (both isolation
modes), a command harness and a per-case command. Under the sandbox every attack must
be refused (the case errored, its reason naming what was denied) and leave no trace;
with ``--sandbox off`` the same attacks succeed, which shows that each probe is real.
"""

from __future__ import annotations

import os
import socket
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cer import sandbox
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.suite.loader import load_suite

pytestmark = pytest.mark.skipif(
    not sandbox.status().available, reason="this kernel has no Landlock"
)

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "examples" / "harnesses" / "calc_harness.py"
SECRET = "SECRET-7731-only-the-suite-knows"

PROBE = """
import ctypes
import os
import re
import socket
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _secret(path):
    with open(path, encoding="utf-8") as handle:
        return re.search(r"SECRET-[0-9]+-[a-z-]+", handle.read()).group(0)


def attack(kind, target="", pid=0, port=0):
    if kind == "read-suite":
        return _secret(os.path.join(HERE, "evals.toml"))
    if kind == "read-module-doc":
        return _secret(os.path.join(HERE, "commonsformat.md"))
    if kind == "write-file":
        with open(target, "ab") as handle:
            handle.write(b"forged")
        return "done"
    if kind == "scratch":
        folder = tempfile.gettempdir()
        with open(os.path.join(folder, "note.txt"), "w") as handle:
            handle.write("scratch works")
        return folder
    if kind == "signal":
        os.kill(pid or os.getppid(), 0)
        return "done"
    if kind == "proc-fd":
        where = f"/proc/{pid}/fd"
        for name in os.listdir(where):
            os.readlink(os.path.join(where, name))
        return "done"
    if kind == "proc-mem":
        with open(f"/proc/{pid}/mem", "rb"):
            return "done"
    if kind == "ptrace":
        libc = ctypes.CDLL(None, use_errno=True)
        victim = pid or os.getppid()
        if libc.ptrace(0x4206, victim, 0, 0) != 0:  # PTRACE_SEIZE: does not stop it
            raise PermissionError(ctypes.get_errno(), "ptrace refused")
        libc.ptrace(17, victim, 0, 0)  # PTRACE_DETACH
        return "done"
    if kind == "tcp":
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return "done"
    raise ValueError(kind)
"""


class Probe:
    """A module folder holding the suite, commonsformat.md, the probe and a history."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.history = root / ".cer" / "history.sqlite"
        self.report = root / "out" / "report.json"
        self.outside = root / "lib" / "planted.txt"
        self.outside.parent.mkdir()
        self.history.parent.mkdir()
        self.history.write_bytes(b"history")
        self.report.parent.mkdir()
        self.report.write_bytes(b"report")
        (root / "commonsformat.md").write_text(f"- answer: {SECRET}\n", encoding="utf-8")
        (root / "probe.py").write_text(PROBE, encoding="utf-8")
        pid = os.getpid()
        cases = [
            ("read-suite", "{}", SECRET),
            ("read-module-doc", "{}", SECRET),
            ("write-history", f"{{ target = {str(self.history)!r} }}", "done"),
            ("write-report", f"{{ target = {str(self.report)!r} }}", "done"),
            ("write-outside", f"{{ target = {str(self.outside)!r} }}", "done"),
            ("signal-supervisor", f"{{ pid = {pid} }}", "done"),
            ("signal-parent", "{}", "done"),
            ("proc-fd", f"{{ pid = {pid} }}", "done"),
            ("proc-mem", f"{{ pid = {pid} }}", "done"),
            ("ptrace-parent", "{}", "done"),
            ("ptrace-supervisor", f"{{ pid = {pid} }}", "done"),
            ("tcp", f"{{ port = {port} }}", "done"),
        ]
        lines = ['commonsformat_evals = "0.2"', 'target = "probe"', ""]
        for name, extra, expected in cases:
            kind = name.split("-")[0] if name.startswith(("signal", "ptrace")) else name
            kind = "write-file" if name.startswith("write-") else kind
            table = extra.strip("{} ")
            fields = f'kind = "{kind}"' + (f", {table}" if table else "")
            lines += [
                "[[cases]]",
                f'name = "{name}"',
                'category = "functional"',
                f"input = {{ {fields} }}",
                f'expect = {{ output = "{expected}" }}',
                "",
            ]
        (root / "evals.toml").write_text("\n".join(lines), encoding="utf-8")

    def run(self, kind: str = "python", **options: Any) -> RunResult:
        impl = {
            "python": "probe:attack",
            "command": f"{sys.executable} {HARNESS} --module probe.py --function attack",
            "command-per-case": f"{sys.executable} {HARNESS} --per-case "
            "--module probe.py --function attack",
        }[kind]
        options.setdefault("timeout", 10.0)
        return run_suite(
            load_suite(self.root / "evals.toml"),
            RunOptions(impl=impl, kind=kind, protected=(str(self.report),), **options),
        )


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def probe(tmp_path: Path, listener: socket.socket, monkeypatch: pytest.MonkeyPatch) -> Probe:
    monkeypatch.chdir(tmp_path)  # the harness names probe.py relative to here
    return Probe(tmp_path, listener.getsockname()[1])


def _by_name(run: RunResult) -> dict[str, Any]:
    return {result.case_name: result for result in run.results}


EVERY_ATTACK = (
    "read-suite",
    "read-module-doc",
    "write-history",
    "write-report",
    "write-outside",
    "signal-supervisor",
    "signal-parent",
    "proc-fd",
    "proc-mem",
    "ptrace-parent",
    "ptrace-supervisor",
    "tcp",
)

REASONS: dict[str, str | tuple[str, ...]] = {
    "read-suite": "the sandbox denied access to {root}/evals.toml (not in the implementation's",
    "read-module-doc": "the sandbox denied access to {root}/commonsformat.md (not in",
    "write-history": "the sandbox denied access to {root}/.cer/history.sqlite (not in",
    "write-report": "the sandbox denied access to {root}/out/report.json",
    "write-outside": "the sandbox denied access to {root}/lib/planted.txt (the implementation "
    "may only read there",
    # In the implementation's world the supervisor is not even there to be signalled.
    "signal-supervisor": ("Operation not permitted", "No such process"),
    "signal-parent": "Operation not permitted",
    "proc-fd": ("Permission denied", "No such file or directory"),
    "proc-mem": ("Permission denied", "No such file or directory"),
    "ptrace-parent": "ptrace refused",
    "ptrace-supervisor": "ptrace refused",
    "tcp": "Permission denied",
}

KINDS = [
    pytest.param("python", "fork", id="python-fork"),
    pytest.param("python", "none", id="python-none"),
    pytest.param("command", "fork", id="harness"),
    pytest.param("command-per-case", "fork", id="per-case"),
]


def _assert_nothing_changed(probe: Probe) -> None:
    assert probe.history.read_bytes() == b"history"
    assert probe.report.read_bytes() == b"report"
    assert not probe.outside.exists()


@pytest.mark.parametrize(("kind", "isolation"), KINDS)
def test_every_attack_is_refused_under_the_sandbox(probe: Probe, kind: str, isolation: str) -> None:
    run = probe.run(kind, isolation=isolation, network="deny")
    results = _by_name(run)
    expected = [
        name
        for name in EVERY_ATTACK
        # Without isolation the case runs in the worker: its parent is the runner.
        if not (isolation == "none" and name.endswith("-parent"))
    ]
    for name in expected:
        result = results[name]
        assert result.status is Status.ERRORED, (name, result.status, result.reason)
        wanted = REASONS[name]
        fragments = (wanted,) if isinstance(wanted, str) else wanted
        found = [
            fragment.format(root=probe.root.resolve()) in (result.reason or "")
            for fragment in fragments
        ]
        assert any(found), (name, result.reason)
    _assert_nothing_changed(probe)


def test_the_attacks_are_real_without_the_sandbox(probe: Probe) -> None:
    """With the sandbox off the same probes pass: they test what they claim to."""
    run = probe.run(sandbox="off")
    results = _by_name(run)
    for name in ("read-suite", "read-module-doc", "write-history", "write-outside"):
        assert results[name].status is Status.PASS, (name, results[name].reason)
    assert results["signal-supervisor"].status is Status.PASS
    assert results["tcp"].status is Status.PASS
    assert probe.outside.read_bytes() == b"forged"


def test_tcp_is_allowed_unless_denied(probe: Probe) -> None:
    run = probe.run(network="allow")
    results = _by_name(run)
    assert results["tcp"].status is Status.PASS, results["tcp"].reason
    assert results["read-suite"].status is Status.ERRORED


def test_the_scratch_folder_is_writable_and_removed_after_the_run(tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "evals.toml").write_text(
        textwrap.dedent(
            """
            commonsformat_evals = "0.2"
            target = "probe"

            [[cases]]
            name = "scratch"
            category = "functional"
            input = { kind = "scratch" }
            expect = { output_max = 0, self_reported = ["output"] }
            """
        ),
        encoding="utf-8",
    )
    run = run_suite(load_suite(tmp_path / "evals.toml"), RunOptions(impl="probe:attack"))
    (result,) = run.results
    # output_max on a string fails, and the mismatch shows the folder it wrote to.
    assert result.status is Status.FAIL, result.reason
    folder = str(result.observation["output"])  # type: ignore[index]
    # The case's own folder, inside the run's.
    assert os.path.basename(os.path.dirname(folder)).startswith("cer-scratch-")
    assert not os.path.exists(os.path.dirname(folder))

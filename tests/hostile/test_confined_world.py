"""The implementation lives in a world built from what it needs: what is not lent is not
there.

Landlock allows paths on the real file system and refuses what is listed; whatever was
not listed stayed reachable: a Unix socket by its path (Landlock has no rule for
connecting to one, so a server of the user's, a terminal multiplexer or an agent, ran
what the implementation asked), UDP to a server on the loopback interface under
``--network deny`` (Landlock's network rules are TCP's), TCP and UDP to any server of the
machine's by default (the machine's network was lent unless denied), ``/proc`` of every process of
the machine, the ``.git`` of a checkout on ``PATH`` (lent whole, and the committed suite
with it), and the files ``cer merge -o`` and ``cer history --html`` wrote (expected
values, read by the next run's implementation). Each attack here must be refused: in the
world (its own mount, PID, IPC and network namespaces, a root holding only what the
policy lends) by absence, and where no world can be built by Landlock's refusal. The
world's network is its own, loopback only, with the default options; ``--network allow``
lends the machine's, and the run says so.

The attacks run for every way an implementation runs (Python with fork isolation and
without, a command harness, a per-case command, a case whose memory is measured), as
root, as root without namespaces, and as the ordinary user ``nobody``: each test is a
few real runs (about 8 s), because each way builds its world differently and only a
real run builds it.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import cer
from cer import sandbox
from cer.cli.main import main
from cer.sandbox import world

pytestmark = pytest.mark.skipif(
    not sandbox.status().available, reason="this kernel has no Landlock"
)

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "examples" / "harnesses" / "calc_harness.py"
NOBODY = 65534
SETPRIV = shutil.which("setpriv")
AS_NOBODY = [str(SETPRIV), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
CAN_RUN = """
import subprocess, sys
import cer.engine.runner
subprocess.run([sys.executable, "-c", "import cer.worker.main"], check=True)
"""
"""What a run needs of its interpreter: cer imported, and itself started again by its
own name (as the run starts its workers)."""

PROBE = r"""
import os
import socket


def _reached(action):
    try:
        action()
    except OSError:
        return "refused"
    return "reached"


def _read(path):
    with open(path, "rb") as handle:
        handle.read()


def _connect(address):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(address)
        client.sendall(b"run: touch pwned")


def _udp(port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        client.sendto(b"expected values", ("127.0.0.1", int(port)))


def _tcp(port):
    with socket.create_connection(("127.0.0.1", int(port)), timeout=5) as client:
        client.sendall(b"expected values?")
        return client.recv(100).decode()


def _udp_echo(port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
        client.settimeout(5)
        client.connect(("127.0.0.1", int(port)))
        client.send(b"expected values?")
        return client.recv(100).decode()


def attack(kind, arg=""):
    if kind in ("tcp", "udp-echo"):  # the answer of the server outside, or why not
        try:
            return (_tcp if kind == "tcp" else _udp_echo)(arg)
        except OSError as exc:
            return f"refused: {exc}"
    if kind in ("socket", "project-socket", "linked-socket", "subfolder-socket"):
        return _reached(lambda: _connect(arg))
    if kind == "abstract":
        return _reached(lambda: _connect("\0" + arg))
    if kind == "udp":
        _reached(lambda: _udp(arg))
        return "refused"  # the server outside tells whether it got through
    if kind == "proc":
        return _reached(lambda: _read(f"/proc/{arg}/cmdline"))
    if kind == "signal":
        return _reached(lambda: os.kill(int(arg), 0))
    if kind in ("git", "merged", "page", "home"):
        return _reached(lambda: _read(arg))
    raise ValueError(kind)
"""

ATTACKS = (
    "socket",
    "project-socket",
    "linked-socket",
    "abstract",
    "udp",
    "proc",
    "signal",
    "git",
    "merged",
    "page",
    "home",
)


@dataclass
class Servers:
    """What the test runs outside the implementation's reach: a Unix socket server by
    path, one by abstract name, a UDP server on the loopback interface."""

    path: str
    abstract: str
    unix: socket.socket
    hidden: socket.socket
    udp: socket.socket
    beside: list[socket.socket]
    """A server's socket in the project's folder (a database's, say)."""

    def reached(self) -> list[str]:
        """Which of the servers something reached."""
        found = []
        named = [("socket", self.unix), ("abstract", self.hidden)]
        for name, server in [*named, *(("project-socket", extra) for extra in self.beside)]:
            server.setblocking(False)
            try:
                server.accept()[0].close()
                found.append(name)
            except BlockingIOError:
                pass
        self.udp.setblocking(False)
        try:
            self.udp.recv(100)
            found.append("udp")
        except BlockingIOError:
            pass
        return found


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder every user may enter (pytest's own is root's alone), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="cer-world-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def servers(base: Path) -> Iterator[Servers]:
    folder = base / "run"  # where the user's own servers keep their sockets
    folder.mkdir()
    folder.chmod(0o777)
    path = str(folder / "server.sock")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(path)
    os.chmod(path, 0o777)
    unix.listen(8)
    abstract = f"cer-test-{os.urandom(6).hex()}"
    hidden = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hidden.bind("\0" + abstract)
    hidden.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    found = Servers(path, abstract, unix, hidden, udp, [])
    yield found
    for server in (unix, hidden, udp, *found.beside):
        server.close()


def _project(base: Path, servers: Servers) -> tuple[Path, dict[str, str]]:
    """The module folder (a suite whose every case expects its attack refused, the
    probe) and the environment the run gets: a checkout on PATH and a home folder,
    each holding a secret."""
    project = base / "project"
    project.mkdir()
    tools = base / "tools"  # a checkout on PATH: its .git holds the committed suite
    (tools / ".git").mkdir(parents=True)
    (tools / ".git" / "secret").write_text("committed suite", encoding="utf-8")
    (tools / "helper").write_text("#!/bin/sh\n", encoding="utf-8")
    home = base / "home"
    home.mkdir()
    (home / ".secret").write_text("token", encoding="utf-8")
    for folder in (base, project, tools, tools / ".git", home):
        folder.chmod(0o755)
    (project / "probe.py").write_text(PROBE, encoding="utf-8")
    # Servers' sockets: one in the project's folder (a database's), one in a folder
    # outside linked into the project (a terminal multiplexer's or an agent's: such a
    # link once lent the folder whole, socket and all, and a server outside ran what
    # the case asked).
    agent = base / "agent"
    agent.mkdir()
    agent.chmod(0o755)
    (project / "agentdir").symlink_to(agent)
    for path in (project / "db.sock", agent / "agent.sock"):
        beside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        beside.bind(str(path))
        os.chmod(path, 0o777)
        beside.listen(8)
        servers.beside.append(beside)
    args = {
        "socket": servers.path,
        "project-socket": str(project / "db.sock"),
        "linked-socket": str(project / "agentdir" / "agent.sock"),
        "abstract": servers.abstract,
        "udp": str(servers.udp.getsockname()[1]),
        "proc": str(os.getpid()),
        "signal": str(os.getpid()),
        "git": str(tools / ".git" / "secret"),
        "merged": str(project / "merged.json"),
        "page": str(project / "history.html"),
        "home": str(home / ".secret"),
    }
    lines = ['commonsformat_evals = "0.2"', 'target = "probe"', ""]
    for name in ATTACKS:
        lines += [
            "[[cases]]",
            f'name = "{name}"',
            'category = "functional"',
            f"input = {{ kind = {json.dumps(name)}, arg = {json.dumps(args[name])} }}",
            'expect = { output = "refused" }',
            "",
        ]
    lines += [  # a case whose memory is measured: it too may reach no server
        "[[cases]]",
        'name = "memory-socket"',
        'category = "functional"',
        f'input = {{ kind = "socket", arg = {json.dumps(servers.path)} }}',
        'expect = { output = "refused", resident_memory_mb_max = 200 }',
        "",
    ]
    (project / "evals.toml").write_text("\n".join(lines), encoding="utf-8")
    environment = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "HOME": str(home)}
    return project, environment


def _write_cer_outputs(project: Path) -> None:
    """What cer writes outside ``cer run``, before the run that reads it: merged
    results (``cer merge -o``) and the history page (``cer history --html``)."""
    suite = str(project / "evals.toml")
    shard = str(project.parent / "shard.json")
    run = ["run", suite, "--impl", "probe:attack", "-q", "-k", "signal"]
    main([*run, "--no-history", "--format", "json", "-o", shard])
    main(["merge", shard, "--format", "json", "-o", str(project / "merged.json")])
    main(run)
    assert main(["history", "--suite", suite, "--html", str(project / "history.html")]) == 0
    assert (project / "merged.json").is_file() and (project / "history.html").is_file()


DRIVER = r"""
import json
import sys

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.suite.loader import load_suite

harness, networks, suite = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
impls = {
    "python": "probe:attack",
    "command": f"{sys.executable} {harness} --module probe.py --function attack",
    "command-per-case": f"{sys.executable} {harness} --per-case "
    "--module probe.py --function attack",
}
found = {}
for network in networks:
    given = {} if network == "default" else {"network": network}
    for name, kind, isolation in (
        ("python-fork", "python", "fork"),
        ("python-none", "python", "none"),
        ("harness", "command", "fork"),
        ("per-case", "command-per-case", "fork"),
    ):
        run = run_suite(
            load_suite(suite),
            RunOptions(impl=impls[kind], kind=kind, isolation=isolation, timeout=10.0, **given),
        )
        found.setdefault(network, {})[name] = {
            "sandbox": run.conditions.sandbox if run.conditions is not None else "",
            "network": run.conditions.network if run.conditions is not None else "",
            "cases": {r.case_name: [r.status.value, r.reason or ""] for r in run.results},
        }
print("RESULT " + json.dumps(found))
"""

WAYS = ("python-fork", "python-none", "harness", "per-case")


def _driven(
    project: Path,
    environment: dict[str, str],
    *,
    as_nobody: str = "",
    networks: tuple[str, ...] = ("default",),
    suite: str = "evals.toml",
) -> dict[str, dict[str, object]]:
    """The run of every way, by the driver, as root or (given its interpreter) as
    ``nobody``, with the default network or each of ``networks`` (then keyed by it)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env.update(environment)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(cer.__file__).resolve().parents[1]), *site.getsitepackages()]
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    python = as_nobody or sys.executable
    command = [python, "-c", DRIVER, str(HARNESS), ",".join(networks), suite]
    if as_nobody:
        assert SETPRIV is not None
        command = [*AS_NOBODY, *command]
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    found: dict[str, dict[str, dict[str, object]]] = json.loads(lines[-1].removeprefix("RESULT "))
    if networks == ("default",):
        return found["default"]
    return {
        f"{network}/{way}": value for network in networks for way, value in found[network].items()
    }


def _assert_all_refused(found: dict[str, dict[str, object]], servers: Servers) -> None:
    for way in WAYS:
        cases = found[way]["cases"]
        assert isinstance(cases, dict)
        # A case whose memory is measured once handed its memory to a helper over a
        # socket: it runs in a world too (without a PID namespace: it may start no
        # process), where no server's socket is.
        for name in ATTACKS:
            status, reason = cases[name]
            assert status == "pass", (way, name, status, reason)
        if way.startswith("python"):  # its seccomp filter ends it at connect
            status, reason = cases["memory-socket"]
            assert status == "errored", (way, status, reason)
            assert "reach another process through a Unix socket" in reason, reason
    assert servers.reached() == []


def test_every_way_out_is_closed_in_the_world_or_by_landlock_alone(
    base: Path, servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, environment = _project(base, servers)
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(project)
    _write_cer_outputs(project)
    servers.reached()  # the runs that wrote them attacked nothing but signals
    found = _driven(project, environment)
    if sandbox.world_refused() is None:
        assert (
            found["python-fork"]["sandbox"] == f"namespaces + landlock ABI {sandbox.status().abi}"
        )
    _assert_all_refused(found, servers)


def test_a_server_socket_in_a_subfolder_of_the_project_is_out_of_reach(
    base: Path, servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's socket in a subfolder of the project (a database's data folder, an
    app server's ``tmp/sockets``): the world lent the subfolder whole, socket and all,
    and the case reached the server. Every socket the machine has bound is left out of
    the policy now, so the folder around it is lent entry by entry, without it."""
    project, environment = _project(base, servers)
    (project / "pgdata").mkdir()
    (project / "pgdata").chmod(0o755)
    path = project / "pgdata" / "db.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen(8)
    servers.beside.append(server)
    (project / "subfolder.toml").write_text(
        'commonsformat_evals = "0.2"\ntarget = "probe"\n\n[[cases]]\nname = "subfolder"\n'
        f'category = "functional"\ninput = {{ kind = "subfolder-socket", arg = "{path}" }}\n'
        'expect = { output = "refused" }\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(project)
    found = _driven(project, environment, suite="subfolder.toml")
    for way in WAYS:
        cases = found[way]["cases"]
        assert isinstance(cases, dict)
        assert cases["subfolder"][0] == "pass", (way, cases)
    assert servers.reached() == []


def test_without_namespaces_landlock_alone_still_refuses_the_lent_paths(
    base: Path, servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fallback: where no world can be built, the checkout on PATH and the files
    cer wrote are refused by Landlock, and the run says it ran with Landlock only."""
    project, environment = _project(base, servers)
    environment[world.DISABLE_ENV] = "1"
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(project)
    _write_cer_outputs(project)
    found = _driven(project, environment)
    for way in WAYS:
        assert str(found[way]["sandbox"]).startswith("landlock only: namespaces turned off")
        cases = found[way]["cases"]
        assert isinstance(cases, dict)
        for name in ("git", "merged", "page", "home", "abstract", "signal"):
            status, reason = cases[name]
            assert status == "pass", (way, name, status, reason)
        if way.startswith("python"):
            # Landlock does not check a socket's path: a case whose memory is measured
            # may not connect at all (its seccomp filter ends it), so that no helper
            # holds its memory for it.
            status, reason = cases["memory-socket"]
            assert status == "errored", (way, status, reason)
            assert "reach another process through a Unix socket" in reason, reason


def _interpreter_for_nobody() -> str | None:
    """A Python the user nobody can run and import cer with, or None."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(cer.__file__).resolve().parents[1]), *site.getsitepackages()]
    )
    for python in dict.fromkeys([sys.executable, f"/usr/bin/{version}"]):
        if not os.path.exists(python) or SETPRIV is None:
            continue
        done = subprocess.run(
            [*AS_NOBODY, python, "-c", CAN_RUN],
            cwd="/",
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        if done.returncode == 0:
            return python
    return None


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")
def test_every_way_out_is_closed_for_an_ordinary_user(
    base: Path, servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``nobody``, the world is built in a user namespace of its own."""
    python = _interpreter_for_nobody()
    if python is None:
        pytest.skip("no interpreter the user nobody can import cer with")
    project, environment = _project(base, servers)
    shutil.chown(project, NOBODY, NOBODY)
    environment["CER_OUTPUTS_RECORD"] = str(project / ".outputs")
    found = _driven(project, environment, as_nobody=python)
    sandboxes = {str(found[way]["sandbox"]) for way in WAYS}
    assert len(sandboxes) == 1, sandboxes
    (said,) = sandboxes
    assert said.startswith(("namespaces + landlock", "landlock only: user namespaces refused"))
    for way in WAYS:
        cases = found[way]["cases"]
        assert isinstance(cases, dict)
        names = ATTACKS if said.startswith("namespaces") else ("git", "home", "signal")
        for name in names:
            status, reason = cases[name]
            assert status == "pass", (way, name, status, reason)
    if said.startswith("namespaces"):
        assert servers.reached() == []


# --------------------------------------------------------------------------- the network


@dataclass
class Listeners:
    """A TCP and a UDP server of the test's on the machine's loopback interface: each
    answers whatever reaches it with ``token``, the output the suite expects, and notes
    that it was reached."""

    token: str
    tcp: socket.socket
    udp: socket.socket
    heard: list[str]


def _serve(listeners: Listeners, stop: threading.Event) -> None:
    listeners.tcp.settimeout(0.1)
    listeners.udp.settimeout(0.1)
    answer = listeners.token.encode()
    while not stop.is_set():
        try:
            client, _ = listeners.tcp.accept()
            with client:
                client.settimeout(2)
                client.recv(100)
                client.sendall(answer)
            listeners.heard.append("tcp")
        except OSError:
            pass
        try:
            _, sender = listeners.udp.recvfrom(100)
            listeners.udp.sendto(answer, sender)
            listeners.heard.append("udp")
        except OSError:
            pass


@pytest.fixture
def listeners() -> Iterator[Listeners]:
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    found = Listeners(f"answer-{os.urandom(6).hex()}", tcp, udp, [])
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(found, stop), daemon=True)
    thread.start()
    yield found
    stop.set()
    thread.join(5)
    tcp.close()
    udp.close()


def _network_project(base: Path, listeners: Listeners) -> Path:
    """A suite whose cases pass only if the implementation reached the servers
    outside: each expects the answer only they give."""
    project = base / "project"
    project.mkdir()
    project.chmod(0o755)
    (project / "probe.py").write_text(PROBE, encoding="utf-8")
    lines = ['commonsformat_evals = "0.2"', 'target = "probe"', ""]
    for name, server in (("tcp", listeners.tcp), ("udp-echo", listeners.udp)):
        lines += [
            "[[cases]]",
            f'name = "{name}"',
            'category = "functional"',
            f'input = {{ kind = "{name}", arg = "{server.getsockname()[1]}" }}',
            f'expect = {{ output = "{listeners.token}" }}',
            "",
        ]
    (project / "network.toml").write_text("\n".join(lines), encoding="utf-8")
    return project


OWN_NETWORK = "loopback only (a network namespace of its own)"
LENT_NETWORK = "the machine's (lent by --network allow)"


def _assert_no_network_unless_lent(
    found: dict[str, dict[str, object]], listeners: Listeners
) -> None:
    """By default a server on the machine's loopback interface is out of reach of every
    way (in the world); with ``--network allow`` it is reached, and the run says what
    was lent. Where no world is built, the run says it lent the machine's network."""
    namespaced = str(found["default/python-fork"]["sandbox"]).startswith("namespaces")
    for way in WAYS:
        default, lent = found[f"default/{way}"], found[f"allow/{way}"]
        assert lent["network"] == LENT_NETWORK, (way, lent["network"])
        for name in ("tcp", "udp-echo"):
            cases = lent["cases"]
            assert isinstance(cases, dict)
            assert cases[name][0] == "pass", (way, name, cases[name])
        cases = default["cases"]
        assert isinstance(cases, dict)
        if namespaced:
            assert default["network"] == OWN_NETWORK, (way, default["network"])
            for name in ("tcp", "udp-echo"):
                status, reason = cases[name]
                assert status == "fail", (way, name, status, reason)
                assert "refused: " in reason, reason
        else:
            assert str(default["network"]).startswith("the machine's (no network namespace: ")
    if namespaced:  # only the runs lent the network reached the servers
        assert sorted(listeners.heard) == ["tcp"] * len(WAYS) + ["udp"] * len(WAYS)


def test_the_world_reaches_no_server_of_the_machine_unless_the_network_is_lent(
    base: Path, listeners: Listeners
) -> None:
    project = _network_project(base, listeners)
    found = _driven(project, {}, networks=("default", "allow"), suite="network.toml")
    if sandbox.world_refused() is None:
        assert found["default/python-fork"]["network"] == OWN_NETWORK
    _assert_no_network_unless_lent(found, listeners)


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")
def test_an_ordinary_users_world_reaches_no_server_unless_the_network_is_lent(
    base: Path, listeners: Listeners
) -> None:
    """As ``nobody``, the network namespace is made in a user namespace of its own."""
    python = _interpreter_for_nobody()
    if python is None:
        pytest.skip("no interpreter the user nobody can import cer with")
    project = _network_project(base, listeners)
    shutil.chown(project, NOBODY, NOBODY)
    found = _driven(
        project,
        {"CER_OUTPUTS_RECORD": str(project / ".outputs")},
        as_nobody=python,
        networks=("default", "allow"),
        suite="network.toml",
    )
    _assert_no_network_unless_lent(found, listeners)

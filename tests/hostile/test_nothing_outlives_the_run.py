"""Nothing of a run outlives it: daemons, orphans, helpers, and cer stopped by a signal.

Each hostile implementation starts processes that carry a marker in their command
line: a daemon made by a double fork and ``setsid`` (from a case that then kills its
worker, from a command harness, from a per-case command, from the implementation's
import). ``cer run`` runs as the program (so it adopts orphans as it does for users),
and afterwards no process with the marker may be alive. SIGTERM and SIGHUP to ``cer``
while cases run stop it promptly with 128 + the signal's number, end every process of
the run, and leave no report of an earlier run in place.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cer import sandbox
from support import assert_none_left

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="adopting orphans needs Linux"
)

SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "first"
category = "functional"
input = {{ x = 1 }}
expect = {{ output = 1 }}

[[cases]]
name = "hostile"
category = "functional"
input = {{ x = 2 }}
expect = {{ output = 2 }}

[[cases]]
name = "last"
category = "functional"
input = {{ x = 3 }}
expect = {{ output = 3 }}
"""

DAEMON = '''
import os, subprocess, sys

def daemon(marker, plain=False):
    """Start `python -c sleep MARKER`: in a session of its own after a double fork,
    or (plain) as an ordinary child."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)", marker]
    if plain:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.execv(sys.executable, argv)
        os._exit(0)
    os.waitpid(pid, 0)

def alive(marker):
    """How many processes marked ``marker`` are still alive (not zombies)."""
    found = 0
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() not in handle.read():
                    continue
            with open(f"/proc/{entry}/stat") as handle:
                found += handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except OSError:
            continue
    return found
'''


def _module(root: Path, impl: str, marker: str) -> None:
    (root / "evals.toml").write_text(SUITE.format(), encoding="utf-8")
    (root / "daemons.py").write_text(DAEMON, encoding="utf-8")
    (root / "hostile_impl.py").write_text(impl.replace("MARKER", marker), encoding="utf-8")


def _cer(root: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "cer.cli", "run", "evals.toml", "--no-history", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


KILLS_ITS_WORKER = """
import os, signal
from daemons import daemon

def f(x):
    if x == 2:
        daemon("MARKER")
        daemon("MARKER", plain=True)
        os.kill(os.getppid(), signal.SIGKILL)
    return x
"""


def test_a_case_that_kills_its_worker_leaves_no_daemon(tmp_path: Path) -> None:
    marker = f"cer-test-{uuid.uuid4().hex}"
    _module(tmp_path, KILLS_ITS_WORKER, marker)
    started = time.monotonic()
    # Without the sandbox, which refuses the signal to the worker.
    process = _cer(tmp_path, "--impl", "hostile_impl:f", "--timeout", "5", "--sandbox", "off")
    out, err = process.communicate(timeout=60)
    assert time.monotonic() - started < 15
    assert b"the runner lost this case" in out, err
    assert b"1 errored" in out
    assert_none_left(marker, "the run")


IMPORT_HELPER = """
from daemons import daemon
daemon("MARKER")
HELPER = daemon("MARKER", plain=True)

def f(x):
    return x
"""


def test_a_daemon_started_at_import_ends_with_the_run(tmp_path: Path) -> None:
    marker = f"cer-test-{uuid.uuid4().hex}"
    _module(tmp_path, IMPORT_HELPER, marker)
    process = _cer(tmp_path, "--impl", "hostile_impl:f", "--timeout", "5")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, (out, err)
    assert_none_left(marker, "the run")


HARNESS = """
import json, sys
sys.path.insert(0, ".")
from daemons import daemon
daemon("MARKER")
for line in sys.stdin:
    message = json.loads(line)
    if message["op"] == "start":
        reply = {"op": "started", "protocol": 1,
                 "implementation": {"name": "h", "version": "1"}}
    elif message["op"] == "run":
        daemon("MARKER")
        x = message["case"]["input"]["value"]["x"]["value"]
        reply = {"op": "result", "seq": message["seq"],
                 "observation": {"type": "integer", "value": x}}
    else:
        break
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
"""

PER_CASE = """
import json, sys
sys.path.insert(0, ".")
from daemons import alive, daemon

message = json.loads(sys.stdin.read())
x = message["case"]["input"]["value"]["x"]["value"]
if alive("MARKER"):
    x = -1  # the case fails: what an earlier case's command left is still running
daemon("MARKER")
sys.stdout.write(json.dumps({"observation": {"type": "integer", "value": x}}))
"""


@pytest.mark.parametrize(
    ("option", "script"),
    [("--impl-cmd", HARNESS), ("--impl-cmd-per-case", PER_CASE)],
    ids=["harness", "per-case-command"],
)
def test_a_command_implementation_leaves_no_daemon(
    tmp_path: Path, option: str, script: str
) -> None:
    marker = f"cer-test-{uuid.uuid4().hex}"
    _module(tmp_path, "", marker)
    (tmp_path / "command.py").write_text(script.replace("MARKER", marker), encoding="utf-8")
    process = _cer(tmp_path, option, f"{sys.executable} command.py", "--timeout", "5")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, (out, err)
    assert_none_left(marker, "the run")


WATCHES_THE_REMOVAL = """
import os, sys
from cer.cli.main import main
from cer.engine.command import process
from daemons import alive

marker = os.environ["DAEMON_MARKER"]
remove = process.scratch.remove

def watched(path):
    # A case's folder is removed: is anything the command left still running, and so
    # still able to write into the folder while it is emptied?
    # Only a case's own folder (the run's scratch root is removed through the same
    # function, once every case's folder has gone).
    if path and os.path.basename(path).startswith("process-"):
        with open("alive-at-removal", "a") as handle:
            handle.write(f"{alive(marker)}\\n")
    return remove(path)

process.scratch.remove = watched
sys.argv = ["cer", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.skipif(not sandbox.status().available, reason="this kernel has no Landlock")
def test_a_per_case_daemon_is_ended_before_its_folder_is_removed(tmp_path: Path) -> None:
    """A case's folder is removed once nothing of its command runs any more: a daemon it
    left could otherwise write into the folder as it is emptied, and outlive the removal."""
    marker = f"cer-test-{uuid.uuid4().hex}"
    _module(tmp_path, "", marker)
    (tmp_path / "command.py").write_text(PER_CASE.replace("MARKER", marker), encoding="utf-8")
    (tmp_path / "driver.py").write_text(WATCHES_THE_REMOVAL, encoding="utf-8")
    command = f"{sys.executable} command.py"
    options = ["--impl-cmd-per-case", command, "--timeout", "5", "--sandbox", "require"]
    run = subprocess.run(
        [sys.executable, "driver.py", "run", "evals.toml", "--no-history", *options],
        cwd=tmp_path,
        capture_output=True,
        env={**os.environ, "DAEMON_MARKER": marker},
        timeout=60,
    )
    assert run.returncode == 0, (run.stdout, run.stderr)
    counts = (tmp_path / "alive-at-removal").read_text(encoding="utf-8").split()
    assert len(counts) == 3, counts  # one folder a case
    assert counts == ["0", "0", "0"], f"daemons alive as their folder was removed: {counts}"
    assert_none_left(marker, "the run")


SLOW = """
import time
from daemons import daemon
daemon("MARKER")

def f(x):
    if x == 2:
        daemon("MARKER")
        daemon("MARKER", plain=True)
        open("case-started", "w").close()
        time.sleep(60)
    return x
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_cer_stops_the_run_and_everything_in_it(tmp_path: Path, signum: int) -> None:
    marker = f"cer-test-{uuid.uuid4().hex}"
    _module(tmp_path, SLOW, marker)
    report = tmp_path / "report.txt"
    junit = tmp_path / "cer-junit.xml"
    report.write_text("3 cases: 3 passed — conformant\n", encoding="utf-8")
    junit.write_text("<testsuites/>", encoding="utf-8")
    process = _cer(
        tmp_path,
        "--impl",
        "hostile_impl:f",
        "--timeout",
        "50",
        "-o",
        str(report),
        "--report",
        "junit",
        "--sandbox",
        "off",  # the case marks its start with a file beside the suite
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "case-started").exists():
        assert time.monotonic() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.02)
    signalled = time.monotonic()
    process.send_signal(signum)
    out, err = process.communicate(timeout=20)
    assert time.monotonic() - signalled < 5
    assert process.returncode == 128 + signum, (out, err)
    assert f"stopped by {signal.Signals(signum).name}".encode() in err
    assert b"Traceback" not in err
    assert not report.exists(), "an earlier run's report was left in place"
    assert not junit.exists()
    assert_none_left(marker, "the run")

"""The pytest plugin ends what a run started, as ``cer run`` does.

pytest adopts no orphans: a daemon (a double fork and ``setsid``) that a command harness
started once outlived the pytest session, while ``cer run`` ended it. The plugin now
adopts orphans before the first run, so every run ends what it left, and the session
ends anything still left when it finishes. The test runs pytest in a subprocess, as a
user would, and then looks for the daemons' marker among the live processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from support import NO_TEST_PLUGINS, assert_none_left

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="adopting orphans needs Linux"
)

SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "first"
category = "functional"
input = { x = 1 }
expect = { output = 1 }

[[cases]]
name = "second"
category = "functional"
input = { x = 2 }
expect = { output = 2 }
"""

DAEMON = '''
import os, sys

def daemon(marker):
    """Start `python -c sleep MARKER` in a session of its own, after a double fork."""
    argv = [sys.executable, "-c", "import time; time.sleep(60)", marker]
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
'''

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


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    command = [sys.executable, "-m", "pytest", "-q", *NO_TEST_PLUGINS, "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, *args, "evals.toml"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _module(root: Path, marker: str) -> None:
    (root / "evals.toml").write_text(SUITE, encoding="utf-8")
    (root / "daemons.py").write_text(DAEMON, encoding="utf-8")
    (root / "harness.py").write_text(HARNESS.replace("MARKER", marker), encoding="utf-8")


def test_a_daemon_of_a_harness_ends_with_the_session(tmp_path: Path) -> None:
    marker = f"cer-test-{uuid.uuid4().hex}"
    _module(tmp_path, marker)
    done = _pytest(tmp_path, "--cer-impl-cmd", f"{sys.executable} harness.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert_none_left(marker, "the pytest session")

"""The GitHub Action runs no workspace code unconfined: a workspace that commits a
``cer/`` package and modules named like the ones the action's script imports
(``json.py``, ``shlex.py``, ``subprocess.py``) does not replace cer. The run step is
started exactly as action.yml spells it, in the workspace; without its ``-I`` the
workspace's ``cer`` runs instead and reports a pass (the control below)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from pytest_scaffold import ONE_CASE_SUITE

from support import ROOT

IMPL = "def double(x):\n    return x * 3\n"

HIJACK = """
import os, sys
if "cer.worker" not in sys.modules:  # the supervisor's side, not the sandboxed worker
    with open(os.environ["HIJACK_MARKER"], "a") as marker:
        marker.write(__name__ + "\\n")
    with open(os.environ["GITHUB_OUTPUT"], "a") as out:
        out.write("exit-code=0\\nverdict=conformant\\n")
    raise SystemExit(0)
"""


def _run_line() -> str:
    """The run step's command, as action.yml writes it."""
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    (line,) = re.findall(r"^\s+run: '(.*cer\.cli\.github_action.*)'$", text, re.MULTILINE)
    return line


def _workspace(folder: Path) -> None:
    (folder / "evals.toml").write_text(ONE_CASE_SUITE, encoding="utf-8")
    (folder / "doubling.py").write_text(IMPL, encoding="utf-8")
    for name in ("cer/__init__.py", "cer/cli/__init__.py", "cer/cli/github_action.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(HIJACK, encoding="utf-8")
    for name in ("json.py", "shlex.py", "subprocess.py"):
        (folder / name).write_text(HIJACK, encoding="utf-8")


def _step(folder: Path, line: str) -> tuple[subprocess.CompletedProcess[str], str, Path]:
    marker = folder.parent / "hijacked.txt"
    output = folder.parent / "output.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CER_", "GITHUB_"))}
    env.update(
        CER_PYTHON=sys.executable,
        CER_SUITE="evals.toml",
        CER_IMPL="doubling:double",
        CER_ARGS="--no-history",
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(folder.parent / "summary.md"),
        HIJACK_MARKER=str(marker),
    )
    done = subprocess.run(
        ["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )
    return done, output.read_text(encoding="utf-8") if output.exists() else "", marker


def test_a_committed_cer_package_does_not_replace_cer(tmp_path: Path) -> None:
    folder = tmp_path / "workspace"
    folder.mkdir()
    _workspace(folder)
    done, outputs, marker = _step(folder, _run_line())
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "exit-code=1\n" in outputs and "exit-code=0" not in outputs
    assert "cer action: -I -m cer.cli run evals.toml" in done.stdout


def test_without_isolation_the_workspace_would_run_instead(tmp_path: Path) -> None:
    """The control: the same workspace replaces cer when the step drops ``-I``."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    _workspace(folder)
    line = _run_line()
    assert " -I " in line
    done, outputs, marker = _step(folder, line.replace(" -I ", " "))
    assert marker.exists() and done.returncode == 0
    assert "exit-code=0" in outputs

"""An implementation that writes GitHub Actions workflow commands into its own text.

``cer run`` in a GitHub Actions step prints the implementation's messages, output and
tracebacks; GitHub's runner acts on any line that starts with ``::`` after its leading
spaces and on ``##[`` anywhere in a line. Where the attack works, the implementation
masks words of the log (``::add-mask::failed``), raises annotations of its own, or stops
the runner from reading ``cer``'s annotations (``::stop-commands::``). Each test reads
``cer``'s output the way the runner does and asserts that only ``cer``'s own commands
are acted on.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from cer.cli.workflow_commands import CommandPause

SUITE = """\
commonsformat_evals = "0.2"

[[cases]]
name = "one"
category = "functional"
input = { text = "x" }
expect = { output = "y" }

[[cases]]
name = "two"
category = "functional"
input = { text = "y" }
expect = { output = "y" }
"""

IMPLEMENTATION = """\
import sys


def run(text):
    print("::stop-commands::guessed")
    print("  ::add-mask::failed")
    print("##[error]the legacy form, anywhere in a line")
    sys.stderr.write("::warning::from standard error\\n")
    if text == "x":
        raise ValueError("boom\\n::add-mask::nonconformant\\n   ::notice title=cer::all passed")
    return {"output": "y\\n::error::in a value"}
"""


def acted_on(lines: list[str]) -> list[str]:
    """The workflow commands GitHub's runner acts on in ``lines``, in order, as
    ``name::data``: the ``::name props::data`` form at the start of a line after its
    leading spaces, the ``##[name ...]data`` form anywhere in a line, and
    ``::stop-commands::TOKEN`` pausing everything until ``::TOKEN::``."""
    acted: list[str] = []
    paused: str | None = None
    for line in lines:
        stripped = line.lstrip()
        name = data = None
        if stripped.startswith("::") and "::" in stripped[2:]:
            head, _, data = stripped[2:].partition("::")
            name = head.split(" ", 1)[0]
        elif "##[" in line:
            rest = line[line.index("##[") + 3 :]
            if "]" in rest:
                head, _, data = rest.partition("]")
                name = head.split(" ", 1)[0]
        if name is None or data is None:
            continue
        if paused is not None:
            if name == paused:
                paused = None
            continue
        if name == "stop-commands":
            paused = data
            continue
        acted.append(f"{name}::{data}")
    return acted


def _run_cer(tmp_path: Path, *extra: str, github: bool = True) -> subprocess.CompletedProcess[str]:
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "loud.py").write_text(IMPLEMENTATION, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "GITHUB_ACTIONS"}
    if github:
        env["GITHUB_ACTIONS"] = "true"
    command = [sys.executable, "-m", "cer.cli", "run", "evals.toml", "--impl", "loud:run"]
    return subprocess.run(
        [*command, "--no-history", "-v", *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_implementations_commands_are_never_acted_on(tmp_path: Path) -> None:
    done = _run_cer(tmp_path, "--report", "github", "--report", "tap")
    assert done.returncode == 1, done.stderr
    # The implementation's text did reach the output (the attack had its chance) ...
    assert "::add-mask::failed" in done.stdout
    assert "##[error]the legacy form" in done.stdout
    # ... and cer's own annotations, and nothing else, are what the runner acts on.
    acted = acted_on(done.stdout.splitlines() + done.stderr.splitlines())
    assert acted, done.stdout
    assert all(command.split("::", 1)[0] in ("error", "notice") for command in acted), acted
    assert [command.split("::", 1)[0] for command in acted] == ["error", "error", "notice"]
    assert acted[0].startswith("error::one: the implementation raised ValueError"), acted
    assert acted[1].startswith("error::two: output: "), acted
    assert "nonconformant" in acted[-1], acted


def test_the_json_results_are_paused_too(tmp_path: Path) -> None:
    done = _run_cer(tmp_path, "--format", "json")
    assert done.returncode == 1, done.stderr
    assert "##[error]" in done.stdout
    assert acted_on(done.stdout.splitlines()) == []


def test_outside_github_actions_the_output_is_untouched(tmp_path: Path) -> None:
    done = _run_cer(tmp_path, github=False)
    assert "stop-commands::" not in done.stdout.replace("::stop-commands::guessed", "")
    assert not done.stdout.startswith("::")


def test_the_pause_token_is_new_for_every_run() -> None:
    first, second = io.StringIO(), io.StringIO()
    for stream in (first, second):
        pause = CommandPause.from_environment(stream, {"GITHUB_ACTIONS": "true"})
        pause.pause()
        with pause.own_commands():
            stream.write("::notice::cer's own\n")
        pause.resume()
    assert first.getvalue() != second.getvalue()
    assert acted_on(first.getvalue().splitlines()) == ["notice::cer's own"]
    assert len(first.getvalue().split("::stop-commands::")[1].split("\n")[0]) == 32

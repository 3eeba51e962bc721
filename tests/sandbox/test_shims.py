"""Interpreter shims and version managers start under the sandbox (cer.sandbox.shims), and a
command that cannot start says so once, in words (cer.engine.command.startup).

Each manager is stood up as a fake chain in a temporary home, shaped like the real one:
pyenv's and asdf's shell-script shims running the manager's scripts, which read a
version file and run an interpreter installed under the manager's folder; mise's shim
linked to the manager's program, which reads its configuration under ~/.config;
volta's links to ``volta-shim``; rye's shim; a uv-, conda- or nvm-style interpreter
reached through a link in ~/.local/bin whose installation holds its library. The fake
interpreter at the end reads its own installation, then runs this Python.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from cer import sandbox
from cer.cli.main import main
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import Status
from cer.sandbox import shims
from cer.suite.loader import load_suite

LANDLOCK = pytest.mark.skipif(not sandbox.status().available, reason="no Landlock here")

HARNESS = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "start":
        implementation = {"name": "h", "version": "1"}
        print(json.dumps({"op": "started", "protocol": 1, "implementation": implementation}))
    elif request["op"] == "run":
        value = {"type": "integer", "value": "1"}
        print(json.dumps({"op": "result", "seq": request["seq"], "observation": value}))
    sys.stdout.flush()
"""

SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "a"
category = "functional"
input = {}
expect = { output = 1 }

[[cases]]
name = "b"
category = "functional"
input = {}
expect = { output = 1 }
"""


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body).lstrip(), encoding="utf-8")
    path.chmod(0o755)
    return path


def _interpreter(prefix: Path, name: str = "python3") -> Path:
    """A fake installation: ``bin/NAME`` reads ``lib/marker`` of its own prefix (as an
    interpreter reads its library), then runs this Python."""
    (prefix / "lib").mkdir(parents=True, exist_ok=True)
    (prefix / "lib" / "marker").write_text("lib\n", encoding="utf-8")
    return _script(
        prefix / "bin" / name,
        f"""
        cat "$(dirname "$(readlink -f "$0")")/../lib/marker" > /dev/null || exit 3
        exec {shlex.quote(sys.executable)} "$@"
        """,
    )


def _link(path: Path, target: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def pyenv(home: Path) -> tuple[str, str]:
    root = home / ".pyenv"
    _interpreter(root / "versions" / "9.9.1")
    (root / "version").write_text("9.9.1\n", encoding="utf-8")
    _script(
        root / "libexec" / "pyenv",
        """
        shift
        program="$1"; shift
        version="$(cat "$PYENV_ROOT/version")" || exit 4
        exec "$PYENV_ROOT/versions/$version/bin/$program" "$@"
        """,
    )
    _script(
        root / "shims" / "python3",
        f"""
        export PYENV_ROOT="{root}"
        exec "{root}/libexec/pyenv" exec "python3" "$@"
        """,
    )
    return str(root / "shims"), "python3"


def asdf(home: Path) -> tuple[str, str]:
    root = home / ".asdf"
    _interpreter(root / "installs" / "python" / "9.9.1")
    (home / ".tool-versions").write_text("python 9.9.1\n", encoding="utf-8")
    _script(
        root / "bin" / "asdf",
        f"""
        shift
        program="$1"; shift
        version="$(cut -d' ' -f2 "{home}/.tool-versions")" || exit 4
        exec "{root}/installs/python/$version/bin/$program" "$@"
        """,
    )
    _script(root / "shims" / "python3", f'exec {root}/bin/asdf exec "python3" "$@"\n')
    return str(root / "shims"), "python3"


def mise(home: Path) -> tuple[str, str]:
    data = home / ".local" / "share" / "mise"
    _interpreter(data / "installs" / "python" / "9.9.1")
    config = home / ".config" / "mise" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('python = "9.9.1"\n', encoding="utf-8")
    program = _script(
        home / "opt" / "mise-release" / "mise",
        """
        version="$(cut -d'"' -f2 "$HOME/.config/mise/config.toml")" || exit 4
        exec "$HOME/.local/share/mise/installs/python/$version/bin/$(basename "$0")" "$@"
        """,
    )
    _link(data / "shims" / "python3", program)
    return str(data / "shims"), "python3"


def volta(home: Path) -> tuple[str, str]:
    root = home / ".volta"
    _interpreter(root / "tools" / "image" / "node" / "9.9.1", "node")
    shim = _script(
        root / "bin" / "volta-shim",
        """
        exec "$HOME/.volta/tools/image/node/9.9.1/bin/$(basename "$0")" "$@"
        """,
    )
    _link(root / "bin" / "node", shim)
    return str(root / "bin"), "node"


def rye(home: Path) -> tuple[str, str]:
    root = home / ".rye"
    _interpreter(root / "py" / "cpython@9.9.1")
    _script(root / "shims" / "python3", 'exec "$HOME/.rye/py/cpython@9.9.1/bin/python3" "$@"\n')
    return str(root / "shims"), "python3"


def uv(home: Path) -> tuple[str, str]:
    real = _interpreter(home / ".local" / "share" / "uv" / "python" / "cpython-9.9.1-linux")
    _link(home / ".local" / "bin" / "python3.9", real)
    return str(home / ".local" / "bin"), "python3.9"


def conda(home: Path) -> tuple[str, str]:
    _interpreter(home / "miniconda3" / "envs" / "work")
    return str(home / "miniconda3" / "envs" / "work" / "bin"), "python3"


def nvm(home: Path) -> tuple[str, str]:
    _interpreter(home / ".nvm" / "versions" / "node" / "v9.9.1", "node")
    return str(home / ".nvm" / "versions" / "node" / "v9.9.1" / "bin"), "node"


MANAGERS = [pyenv, asdf, mise, volta, rye, uv, conda, nvm]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module folder (the working directory) and a home folder apart from it."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "evals.toml").write_text(SUITE, encoding="utf-8")
    (root / "harness.py").write_text(HARNESS, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(root)
    return root


def _run(project: Path, command: str) -> list[tuple[Status, str]]:
    result = run_suite(
        load_suite(project / "evals.toml"),
        RunOptions(impl=command, kind="command", timeout=10.0, sandbox="require"),
    )
    return [(r.status, r.reason or "") for r in result.results]


@LANDLOCK
@pytest.mark.parametrize("manager", MANAGERS, ids=lambda manager: manager.__name__)
def test_a_harness_started_through_a_version_manager_runs_under_the_sandbox(
    project: Path, monkeypatch: pytest.MonkeyPatch, manager: object
) -> None:
    folder, program = manager(project.parent / "home")  # type: ignore[operator]
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    assert shims.resolve(program) == os.path.join(folder, program)
    got = _run(project, f"{program} harness.py")
    assert got == [(Status.PASS, ""), (Status.PASS, "")]


@LANDLOCK
@pytest.mark.skipif(
    not os.path.exists(os.path.expanduser("~/.pyenv/shims/python3")),
    reason="no pyenv install here",
)
def test_this_machines_own_pyenv_python_starts_a_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shims_folder = os.path.expanduser("~/.pyenv/shims")
    (tmp_path / "evals.toml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "harness.py").write_text(HARNESS, encoding="utf-8")
    monkeypatch.setenv("PATH", f"{shims_folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    assert shutil.which("python3") == os.path.join(shims_folder, "python3")
    assert _run(tmp_path, "python3 harness.py") == [(Status.PASS, ""), (Status.PASS, "")]


def test_the_chain_is_followed_as_the_shell_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    folder, program = pyenv(home)
    monkeypatch.setenv("PATH", folder)
    found = shims.chain_reads(program, cwd=str(tmp_path), home=str(home))
    assert str(home / ".pyenv") in found  # the manager's folder: scripts, versions, version
    assert str(home / ".pyenv" / "libexec" / "pyenv") in found
    assert not any(path in (str(home), "/", str(tmp_path)) for path in found)
    assert shims.chain_reads("no-such-program-anywhere") == []


def test_a_bare_bin_folder_lends_no_more_than_a_toolchain(tmp_path: Path) -> None:
    home = tmp_path / "home"
    program = _interpreter(home)  # ~/bin/python3: its "installation" would be the home
    found = shims.chain_reads(str(program), cwd=str(tmp_path), home=str(home))
    assert str(home) not in found and str(home / "bin") in found


# --- one cause, one message -------------------------------------------------------------


_REFUSED = "not in its world" if sandbox.world_refused() is None else "permission denied"
"""How a path the sandbox does not lend is refused: absent from the implementation's
world, or refused by Landlock where there is none."""


def _hidden_manager(home: Path) -> str:
    """A shim whose manager sits where nothing names it (its path is built at run time)."""
    _script(home / ".hidden" / "libexec" / "manager", 'exec python3 "$@"\n')
    _script(home / "tools" / "py", 'exec "$HOME/.hidden/libexec/manager" "$@"\n')
    return str(home / "tools")


@LANDLOCK
def test_a_harness_that_cannot_start_under_the_sandbox_says_so_once_in_words(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = project.parent / "home"
    monkeypatch.setenv("PATH", f"{_hidden_manager(home)}{os.pathsep}{os.environ['PATH']}")
    cause = (
        f"the harness could not start under the sandbox: ~/.hidden/libexec/manager: {_REFUSED} "
        "(allow it with --sandbox-read ~/.hidden/libexec/manager, or run with --sandbox off)"
    )
    assert _run(project, "py harness.py") == [(Status.ERRORED, f"not run: {cause}")] * 2
    code = main(["run", "evals.toml", "--impl-cmd", "py harness.py"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.count(cause) == 1, out
    assert out.startswith(f"note: {cause}; its stderr ends with:\n"), out
    assert "‼ ERROR 2 cases not run: the command implementation could not start (above)" in out
    code = main(
        [
            "run",
            "evals.toml",
            "--impl-cmd",
            "py harness.py",
            "--sandbox-read",
            str(home / ".hidden" / "libexec" / "manager"),
        ]
    )
    assert code == 0, capsys.readouterr().out


@LANDLOCK
def test_a_per_case_command_that_cannot_start_under_the_sandbox_says_so_once(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = project.parent / "home"
    monkeypatch.setenv("PATH", f"{_hidden_manager(home)}{os.pathsep}{os.environ['PATH']}")
    cause = (
        "the per-case command could not start under the sandbox: ~/.hidden/libexec/manager: "
        f"{_REFUSED} (allow it with --sandbox-read ~/.hidden/libexec/manager, or run "
        "with --sandbox off)"
    )
    result = run_suite(
        load_suite(project / "evals.toml"),
        RunOptions(impl="py harness.py", kind="command-per-case", timeout=10.0),
    )
    assert [(r.status, r.reason) for r in result.results] == [
        (Status.ERRORED, f"not run: {cause}")
    ] * 2
    assert [note.split("; its stderr")[0] for note in result.notes] == [cause]
    code = main(["run", "evals.toml", "--impl-cmd-per-case", "py harness.py"])
    out = capsys.readouterr().out
    assert code == 1 and out.count(cause) == 1, out


def test_a_command_that_cannot_start_without_the_sandbox_keeps_its_cause(
    project: Path,
) -> None:
    result = run_suite(
        load_suite(project / "evals.toml"),
        RunOptions(impl="sh -c 'exit 3'", kind="command", timeout=5.0, sandbox="off"),
    )
    reasons = {r.reason for r in result.results}
    assert reasons == {
        "not run: the command implementation sh -c 'exit 3' could not be started: the "
        "harness exited with status 3 before answering start"
    }
    assert result.notes == (next(iter(reasons)).removeprefix("not run: "),)


@LANDLOCK
def test_a_harness_run_by_another_virtual_environments_python_finds_its_packages(
    project: Path, tmp_path: Path
) -> None:
    """A virtual environment's ``bin/python`` is a link to the base interpreter, which
    reads the environment's ``pyvenv.cfg`` and packages: they were refused, so the
    harness could not start ("pyvenv.cfg: permission denied") or, once that was named,
    failed to import its packages without a word of the sandbox."""
    venv = tmp_path / "elsewhere" / ".venv"
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    packages = venv / "lib" / version / "site-packages" / "helperlib"
    packages.mkdir(parents=True)
    (packages / "__init__.py").write_text("ANSWER = 1\n", encoding="utf-8")
    base = os.path.realpath(sys.executable)
    (venv / "pyvenv.cfg").write_text(
        f"home = {os.path.dirname(base)}\ninclude-system-site-packages = false\n",
        encoding="utf-8",
    )
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to(base)
    (project / "harness.py").write_text("import helperlib\n" + HARNESS, encoding="utf-8")
    assert str(venv) in shims.chain_reads(str(venv / "bin" / "python"))
    got = _run(project, f"{venv / 'bin' / 'python'} harness.py")
    assert got == [(Status.PASS, ""), (Status.PASS, "")]


@LANDLOCK
def test_a_tool_on_path_linked_into_an_installation_of_its_own_runs_under_the_sandbox(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Homebrew, pipx and nvm put links on ``PATH`` into an installation elsewhere
    (``bin/tool`` → ``Cellar/tool/1.0/bin/tool``), whose files the tool reads: run by
    name from the implementation, it was refused ("Permission denied: 'mytool'")."""
    brew = tmp_path / "brew"
    installation = brew / "Cellar" / "mytool" / "1.0"
    _script(
        installation / "bin" / "mytool",
        """
        cat "$(dirname "$(readlink -f "$0")")/../share/answer"
        """,
    )
    (installation / "share").mkdir()
    (installation / "share" / "answer").write_text("1\n", encoding="utf-8")
    (brew / "bin").mkdir()
    (brew / "bin" / "mytool").symlink_to(
        Path("..") / "Cellar" / "mytool" / "1.0" / "bin" / "mytool"
    )
    monkeypatch.setenv("PATH", f"{brew / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert shims.linked_installations([str(brew / "bin")]) == [str(installation)]
    (project / "tool_impl.py").write_text(
        "import subprocess\n\ndef f():\n"
        "    done = subprocess.run(['mytool'], capture_output=True, text=True, check=True)\n"
        "    return int(done.stdout)\n",
        encoding="utf-8",
    )
    result = run_suite(
        load_suite(project / "evals.toml"),
        RunOptions(impl="tool_impl:f", timeout=10.0, sandbox="require"),
    )
    assert [(r.status, r.reason) for r in result.results] == [(Status.PASS, None)] * 2


NODE_HARNESS = """
const readline = require("readline");
const answer = require("answer");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const request = JSON.parse(line);
  let reply;
  if (request.op === "start") {
    reply = { op: "started", protocol: 1, implementation: { name: "h", version: "1" } };
  } else if (request.op === "run") {
    reply = { op: "result", seq: request.seq,
              observation: { type: "integer", value: String(answer.value) } };
  } else {
    process.exit(0);
  }
  process.stdout.write(JSON.stringify(reply) + "\\n");
});
"""


@LANDLOCK
@pytest.mark.skipif(shutil.which("node") is None, reason="no node here")
def test_a_node_harness_finds_the_packages_of_its_workspace_root(
    project: Path, tmp_path: Path
) -> None:
    """Node looks for a package in the ``node_modules`` of every folder above the
    script, as in an npm or yarn workspace; they were refused, each file in turn."""
    workspace = tmp_path / "mono"
    (workspace / "node_modules" / "answer").mkdir(parents=True)
    (workspace / "node_modules" / "answer" / "index.js").write_text(
        "module.exports = { value: 1 };\n", encoding="utf-8"
    )
    harness = workspace / "packages" / "harness" / "harness.js"
    harness.parent.mkdir(parents=True)
    harness.write_text(NODE_HARNESS, encoding="utf-8")
    assert str(workspace / "node_modules") in shims.node_module_folders(str(harness.parent))
    assert _run(project, f"node {harness}") == [(Status.PASS, ""), (Status.PASS, "")]

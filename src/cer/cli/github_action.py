"""What the GitHub Action (``action.yml`` at the repository's root) runs: ``cer run``
with the action's inputs, then the job summary and the step's outputs.

Kept here rather than in the YAML so that it can be tested against a fake ``GITHUB_*``
environment. It reads its inputs from ``CER_*`` variables (the action maps its inputs
onto them), writes every report into one folder for the artifact upload, appends the
Markdown report to ``$GITHUB_STEP_SUMMARY``, writes ``exit-code``, ``verdict``,
``report-dir`` and ``artifact-name`` to ``$GITHUB_OUTPUT``, and exits with ``cer``'s
own exit code, so the step fails exactly when ``cer run`` does. See docs/ci.md.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cer.engine.kinds import KINDS

__all__ = ["ActionInputs", "InputError", "cer_command", "cer_environment", "main"]

SUMMARY_LIMIT = 1_000_000
"""Bytes of Markdown appended to the job summary at most (GitHub refuses more than
1 MiB per step)."""


class InputError(Exception):
    """The action's inputs ask for something impossible."""


@dataclass(frozen=True)
class ActionInputs:
    """The action's inputs, read from the environment."""

    suite: str = ""
    impl: str = ""
    impl_cmd: str = ""
    baseline: str = ""
    shard: str = ""
    args: str = ""
    report_dir: str = "cer-reports"

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> ActionInputs:
        def get(name: str, default: str = "") -> str:
            return env.get(f"CER_{name}", default).strip()

        inputs = cls(
            suite=get("SUITE"),
            impl=get("IMPL"),
            impl_cmd=get("IMPL_CMD"),
            baseline=get("BASELINE"),
            shard=get("SHARD"),
            args=get("ARGS"),
            report_dir=get("REPORT_DIR") or "cer-reports",
        )
        if inputs.impl and inputs.impl_cmd:
            raise InputError("give impl or impl-cmd, not both")
        if inputs.shard and not re.fullmatch(r"[0-9]+/[0-9]+", inputs.shard):
            raise InputError(f"shard must look like I/N (e.g. 1/4), got {inputs.shard!r}")
        return inputs

    @property
    def artifact_name(self) -> str:
        """``cer-reports``, or ``cer-reports-shard-1-of-4`` for a shard, so that the
        shards of a matrix upload apart."""
        if not self.shard:
            return "cer-reports"
        index, _, count = self.shard.partition("/")
        return f"cer-reports-shard-{index}-of-{count}"


def report_paths(inputs: ActionInputs) -> dict[str, Path]:
    """Where each report goes: one folder, uploaded as the artifact."""
    folder = Path(inputs.report_dir)
    return {
        "html": folder / "cer-report.html",
        "manifest": folder / "cer-manifest.json",
        "json": folder / "cer-results.json",
        "markdown": folder / "cer-summary.md",
    }


def cer_command(inputs: ActionInputs, python: str = sys.executable) -> list[str]:
    """The ``cer run`` command line for these inputs (split like a shell, never run
    through one). ``args`` go last, so they can add to or override the rest.

    ``python`` is this script's own interpreter (cer's environment), started isolated
    (``-I``): it runs in the workspace, and without ``-I`` the workspace would come
    first on its path, where a committed ``cer`` package or a module named like one
    cer imports (``json.py``) would run in place of cer, unconfined."""
    try:
        extra = shlex.split(inputs.args)
    except ValueError as exc:
        raise InputError(f"cannot split args {inputs.args!r}: {exc}") from None
    command = [python, "-I", "-m", "cer.cli", "run"]
    if inputs.suite:
        command.append(inputs.suite)
    if inputs.impl:
        command += [KINDS["python"].option, inputs.impl]
    if inputs.impl_cmd:
        command += [KINDS["command"].option, inputs.impl_cmd]
    if inputs.baseline:
        command += ["--baseline", inputs.baseline]
    if inputs.shard:
        command += ["--shard", inputs.shard]
    command.append("--quiet")
    for name, path in report_paths(inputs).items():
        command += ["--report", f"{name}={path}"]
    command += ["--report", "github"]
    return command + extra


def _append(path: str | None, text: str) -> None:
    if not path:
        return
    with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
        handle.write(text)


def _one_line(text: str) -> str:
    return " ".join(text.split())


KEPT_PYTHON_VARIABLES = frozenset(
    {
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONFAULTHANDLER",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONNOUSERSITE",
        "PYTHONUNBUFFERED",
        "PYTHONUTF8",
    }
)
"""The ``PYTHON*`` variables of the job that reach ``cer run``: none that puts a folder
on an interpreter's path or runs code at its start."""

STEP_FILES = ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE")
"""The files through which a step talks to the runner: this script writes them; ``cer
run``, its worker and the implementation are not told where they are."""


def cer_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The environment ``cer run`` gets: the job's, without ``PYTHONPATH``,
    ``PYTHONHOME``, ``PYTHONUSERBASE``, ``PYTHONSTARTUP`` or any other ``PYTHON*``
    variable but :data:`KEPT_PYTHON_VARIABLES`, and without :data:`STEP_FILES`.

    ``cer run`` itself runs isolated (``-I``) and reads none of them, but its worker
    is started with the environment it was given, before the sandbox: a
    ``PYTHONPATH`` holding the workspace (``.``, as many jobs set it) would put a
    committed ``json.py`` or ``sitecustomize.py`` ahead of the standard library
    there, and ``PYTHONUSERBASE`` a folder of ``.pth`` files. The implementation's
    folders are named with ``--path`` or ``[tool.cer] paths`` instead."""
    return {
        key: value
        for key, value in env.items()
        if key not in STEP_FILES and (not key.startswith("PYTHON") or key in KEPT_PYTHON_VARIABLES)
    }


def _verdict(results: Path) -> str:
    """The verdict sentence from the JSON results, or "" when there are none."""
    try:
        document = json.loads(results.read_text(encoding="utf-8"))
        return str(document["conformance"]["statement"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def run_action(env: Mapping[str, str], python: str = sys.executable, cwd: str | None = None) -> int:
    """Run ``cer`` for the inputs in ``env``, then write the summary and outputs; the
    exit code is ``cer``'s (2 when the inputs are unusable)."""
    summary_file = env.get("GITHUB_STEP_SUMMARY")
    output_file = env.get("GITHUB_OUTPUT")
    try:
        inputs = ActionInputs.from_environment(env)
        command = cer_command(inputs, python)
    except InputError as exc:
        sys.stderr.write(f"cer action: error: {exc}\n")
        _append(summary_file, f"### cer\n\nThe action's inputs are unusable: {exc}\n")
        _append(output_file, "exit-code=2\n")
        return 2
    paths = report_paths(inputs)
    base = Path(cwd) if cwd is not None else Path.cwd()
    (base / inputs.report_dir).mkdir(parents=True, exist_ok=True)
    sys.stdout.write(f"cer action: {shlex.join(command[1:])}\n")
    sys.stdout.flush()
    code = subprocess.run(command, cwd=cwd, env=cer_environment(env), check=False).returncode
    markdown = base / paths["markdown"]
    try:
        text = markdown.read_text(encoding="utf-8")
    except OSError:
        text = (
            f"### cer\n\n`cer run` exited with code {code} and wrote no report; "
            "the step's log says why.\n"
        )
    data = text.encode("utf-8", "backslashreplace")
    if len(data) > SUMMARY_LIMIT:
        text = data[:SUMMARY_LIMIT].decode("utf-8", "ignore") + (
            "\n\n(cut: the whole report is in the artifact)\n"
        )
    _append(summary_file, text + "\n")
    verdict = _one_line(_verdict(base / paths["json"]))
    _append(
        output_file,
        f"exit-code={code}\nverdict={verdict}\nreport-dir={inputs.report_dir}\n"
        f"artifact-name={inputs.artifact_name}\n",
    )
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """``python -I -m cer.cli.github_action``: the action's run step, started by
    cer's own interpreter, isolated (see :func:`cer_command`)."""
    return run_action(os.environ)


if __name__ == "__main__":
    raise SystemExit(main())

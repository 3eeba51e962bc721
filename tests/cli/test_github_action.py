"""The GitHub Action's script against a fake ``GITHUB_*`` environment: the command it
runs, the job summary, the step's outputs and its exit code; and action.yml handing
each input to the script."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from cer.cli.github_action import ActionInputs, InputError, cer_command, run_action
from support import EXAMPLES, ROOT

CALC = EXAMPLES / "calc" / "evals.toml"


def environment(tmp_path: Path, **inputs: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CER_")}
    env.pop("GITHUB_ACTIONS", None)
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "summary.md")
    env["GITHUB_OUTPUT"] = str(tmp_path / "output.txt")
    env.update({f"CER_{key.upper()}": value for key, value in inputs.items()})
    return env


def outputs(tmp_path: Path) -> dict[str, str]:
    text = (tmp_path / "output.txt").read_text(encoding="utf-8")
    return dict(line.split("=", 1) for line in text.splitlines())


def test_a_run_with_its_known_failures_passes_the_step(tmp_path: Path) -> None:
    (tmp_path / "known.toml").write_text(
        "".join(
            f'[[known]]\ncase = "{name}"\nstatus = "fail"\nreason = "sloppy on purpose"\n\n'
            for name in (
                "*division*",
                "mixed-precedence-chain",
                "rejects-power-tower",
                "power-is-right-associative",
                "unary-minus-looser-than-power",
            )
        ),
        encoding="utf-8",
    )
    env = environment(
        tmp_path,
        suite=str(CALC),
        impl="calc_sloppy:evaluate",
        baseline="known.toml",
        args="--no-history -j 2",
    )
    code = run_action(env, cwd=str(tmp_path))
    # the glob names passing division cases too: stale entries fail the step
    assert code == 1
    found = outputs(tmp_path)
    assert found["exit-code"] == "1"
    assert found["verdict"].startswith("nonconformant: 8 known failures, no regressions, ")
    assert "stale baseline entr" in found["verdict"]
    assert found["artifact-name"] == "cer-reports"
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "#### Stale baseline entries" in summary
    reports = tmp_path / "cer-reports"
    assert {p.name for p in reports.iterdir()} >= {
        "cer-report.html",
        "cer-manifest.json",
        "cer-results.json",
        "cer-summary.md",
    }


def test_a_clean_run_exits_zero_and_a_regression_fails_the_step(tmp_path: Path) -> None:
    env = environment(tmp_path, suite=str(CALC), impl="calc_ref:evaluate", args="--no-history")
    assert run_action(env, cwd=str(tmp_path)) == 0
    assert outputs(tmp_path)["verdict"] == "conformant, 15 of 15 constraints covered"
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "conformant, 15 of 15 constraints covered" in summary.replace("&#44;", ",")
    (tmp_path / "output.txt").unlink()
    env = environment(tmp_path, suite=str(CALC), impl="calc_sloppy:evaluate", args="--no-history")
    assert run_action(env, cwd=str(tmp_path)) == 1
    assert outputs(tmp_path)["exit-code"] == "1"


def test_a_shard_uploads_under_its_own_name(tmp_path: Path) -> None:
    env = environment(
        tmp_path, suite=str(CALC), impl="calc_ref:evaluate", shard="2/3", args="--no-history"
    )
    assert run_action(env, cwd=str(tmp_path)) == 0
    assert outputs(tmp_path)["artifact-name"] == "cer-reports-shard-2-of-3"


def test_cer_that_cannot_run_still_writes_a_summary(tmp_path: Path) -> None:
    env = environment(tmp_path, suite=str(tmp_path / "missing.toml"), impl="calc_ref:evaluate")
    assert run_action(env, cwd=str(tmp_path)) == 2
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "exited with code 2 and wrote no report" in summary
    assert outputs(tmp_path)["exit-code"] == "2"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"impl": "a:b", "impl_cmd": "node x.mjs"}, "impl or impl-cmd, not both"),
        ({"shard": "2 of 3"}, "shard must look like I/N"),
        ({"args": "--case 'unterminated"}, "cannot split args"),
    ],
)
def test_unusable_inputs_exit_two_with_a_summary(
    tmp_path: Path, inputs: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_action(environment(tmp_path, **inputs), cwd=str(tmp_path)) == 2
    assert message in capsys.readouterr().err
    assert message in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_the_command_is_split_never_run_through_a_shell() -> None:
    inputs = ActionInputs(
        suite="evals.toml; rm -rf /",
        impl_cmd="node calc.mjs --x '$(whoami)'",
        args="--case 'tabs-*' -j 2",
    )
    command = cer_command(inputs, python="python3")
    assert command[:6] == ["python3", "-I", "-m", "cer.cli", "run", "evals.toml; rm -rf /"]
    assert command[6:8] == ["--impl-cmd", "node calc.mjs --x '$(whoami)'"]
    assert command[-3:] == ["tabs-*", "-j", "2"]
    assert "--report" in command and "markdown=cer-reports/cer-summary.md" in command
    with pytest.raises(InputError):
        ActionInputs.from_environment({"CER_SHARD": "x"})


def test_action_yml_hands_every_input_to_the_script_through_the_environment() -> None:
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    assert re.search(r"^runs:\n  using: composite$", text, re.MULTILINE)
    inputs_block = text.split("\ninputs:\n", 1)[1].split("\noutputs:\n", 1)[0]
    names = re.findall(r"^  ([a-z][a-z-]*):$", inputs_block, re.MULTILINE)
    assert {"suite", "impl", "impl-cmd", "baseline", "shard", "args"} <= set(names)
    for name in ("suite", "impl", "impl-cmd", "baseline", "shard", "args", "report-dir"):
        variable = "CER_" + name.upper().replace("-", "_")
        assert f"{variable}: ${{{{ inputs.{name} }}}}" in text
        assert f'get("{variable[4:]}")' in (
            ROOT / "src" / "cer" / "cli" / "github_action.py"
        ).read_text(encoding="utf-8")
    # no input is pasted into a script's text, where it could inject shell commands
    for script in re.findall(r"run: \|\n((?:        .*\n)+)|run: (.*)", text):
        assert "${{" not in "".join(script)
    assert '"$CER_PYTHON" -I -m cer.cli.github_action' in text
    assert "actions/upload-artifact@v4" in text


def _run_scripts(text: str) -> list[str]:
    """The shell text of every ``run:`` of action.yml."""
    scripts = []
    for block, line in re.findall(r"run: \|\n((?:        .*\n)+)|run: (.*)", text):
        line = line.strip()
        if len(line) > 1 and line[0] == line[-1] == "'":
            line = line[1:-1]  # a YAML single-quoted scalar
        scripts.append(block or line)
    return scripts


def test_every_python_the_action_starts_is_cer_own_and_isolated() -> None:
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    scripts = "\n".join(_run_scripts(text))
    pythons = r'(?i)(?:^|[\s(;&|])("?[^\s=]*python"?)\s+(\S+)'
    starts = re.findall(pythons + r"(?: -\S+)* -m (\S+)", scripts)
    assert {module for *_, module in starts} == {"venv", "pip", "cer.cli.github_action"}
    words = re.findall(pythons, scripts)
    assert len(words) == 4
    for python, first in words:
        assert first == "-I", f"{python} starts without -I: {scripts}"
    # cer lives in an environment of its own outside the workspace
    assert "CER_VENV: ${{ runner.temp }}/cer-venv" in text
    assert "working-directory: ${{ runner.temp }}" in text
    assert "CER_PYTHON: ${{ steps.install.outputs.python }}" in text


def test_action_yml_is_plain_yaml_a_runner_reads() -> None:
    """A plain (unquoted) YAML value may not hold ``: ``: GitHub refuses such a file."""
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        key, sep, value = line.strip().partition(": ")
        if not sep or key.startswith(("#", "-")) or value.startswith(("'", '"', "|", ">")):
            continue
        assert ": " not in value, f"action.yml:{number}: quote the value: {line.strip()}"

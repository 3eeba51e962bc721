"""docs/first-module.md is true: every command it shows is run, in order, in an empty
folder, and what it prints is what the page says (``...`` stands for lines left out; a
summary line is compared up to its time)."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import support
from cer.cli.init import init_module, module_name

ROOT = support.ROOT
PAGE = ROOT / "docs" / "first-module.md"
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Step:
    command: str | None
    """A shell command; None for a file to write."""
    text: str
    """The output the page shows, or the file's content."""
    path: str = ""


def steps(page: str) -> list[Step]:
    found: list[Step] = []
    lines = page.splitlines()
    index = 0
    target = ""
    while index < len(lines):
        line = lines[index]
        marker = re.fullmatch(r"<!-- write: (\S+) -->", line)
        if marker:
            target = marker.group(1)
        elif line.startswith("```"):
            kind = line[3:].strip()
            body = []
            index += 1
            while not lines[index].startswith("```"):
                body.append(lines[index])
                index += 1
            if kind == "python" and target:
                found.append(Step(None, "\n".join(body) + "\n", target))
                target = ""
            elif kind == "console":
                for chunk in re.split(r"^\$ ", "\n".join(body), flags=re.M)[1:]:
                    command, _, output = chunk.partition("\n")
                    found.append(Step(command, output))
        index += 1
    return found


def _matches(shown: str, printed: list[str]) -> bool:
    if " cases: " in shown and " in " in shown:
        counts, _, rest = shown.partition(" in ")
        verdict = rest.split("— ")[-1]
        return any(p.startswith(counts + " in ") and f"— {verdict}" in p for p in printed)
    return shown in printed


def test_the_page_has_its_steps() -> None:
    found = steps(PAGE.read_text(encoding="utf-8"))
    assert [s.command for s in found if s.command] == [
        "cer init",
        "cer check",
        "cer run",
        "cer run",
        "cer run",
    ]
    assert sum(1 for s in found if s.command is None) == 2


@pytest.mark.slow
def test_walk_the_first_module_page(tmp_path: Path) -> None:
    folder = tmp_path / "tidy"
    folder.mkdir()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("NO_COLOR", None)
    for step in steps(PAGE.read_text(encoding="utf-8")):
        if step.command is None:
            (folder / step.path).write_text(step.text, encoding="utf-8")
            continue
        done = subprocess.run(
            shlex.split(step.command),
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        printed = [line.rstrip() for line in done.stdout.splitlines()]
        shown = [line.rstrip() for line in step.text.splitlines() if line.strip()]
        for line in shown:
            if line == "...":
                continue
            assert _matches(line, printed), (step.command, line, done.stdout, done.stderr)
        expected = 1 if shown and shown[-1].endswith("nonconformant") else 0
        assert done.returncode == expected, (step.command, done.stdout, done.stderr)


def test_init_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "evals.toml").write_text("# mine\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"  # a comment kept\n\n[tool.ruff]\nline-length = 90\n',
        encoding="utf-8",
    )
    name, done = init_module(tmp_path, "my_mod")
    assert name == "my_mod"
    assert [(w.path.name, w.action) for w in done] == [
        ("commonsformat.md", "wrote"),
        ("evals.toml", "kept"),
        ("my_mod.py", "wrote"),
        ("pyproject.toml", "added [tool.cer] to"),
    ]
    assert (tmp_path / "evals.toml").read_text(encoding="utf-8") == "# mine\n"
    text = (tmp_path / "pyproject.toml").read_text(encoding="utf-8")
    assert text.startswith('[project]\nname = "x"  # a comment kept\n\n[tool.ruff]\n')
    assert tomllib.loads(text)["tool"]["cer"] == {"suite": "evals.toml", "impl": "my_mod:my_mod"}
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    _, again = init_module(tmp_path, "my_mod")
    assert {w.action for w in again} == {"kept", "kept [tool.cer] of"}
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_the_module_its_function_and_its_cases_are_named_for_it(tmp_path: Path) -> None:
    init_module(tmp_path, "cache_control")
    stub = (tmp_path / "cache_control.py").read_text(encoding="utf-8")
    assert "def cache_control(text: str) -> str:" in stub
    assert "normalize" not in stub
    suite = tomllib.loads((tmp_path / "evals.toml").read_text(encoding="utf-8"))
    names = [
        case["name"]
        for key in ("cases", "adversarial", "generator_adversary")
        for case in suite[key]
    ]
    assert names and all(name.startswith("cache-control-") for name in names)
    assert "def cache_control(text: str) -> str" in (tmp_path / "commonsformat.md").read_text(
        encoding="utf-8"
    )
    config = tomllib.loads((tmp_path / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["cer"]["impl"] == "cache_control:cache_control"


@pytest.mark.parametrize(
    ("bad", "offered"),
    [
        ("my-mod", "cer init my_mod"),
        ("Cache Control", "cer init cache_control"),
        ("1abc", "cer init mod_1abc"),
        ("a/b", "cer init a_b"),
        ("", "pass a NAME"),
    ],
)
def test_a_name_that_is_no_identifier_is_refused_with_the_fixed_one(
    bad: str, offered: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="cannot name a Python module") as refused:
        module_name(bad, tmp_path)
    assert offered in str(refused.value)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("taken", "why", "offered"),
    [
        ("json", "standard library", "cer init my_json"),
        ("string", "standard library", "cer init my_string"),
        ("class", "keyword", "cer init class_"),
    ],
)
def test_a_name_the_standard_library_or_python_has_is_refused(
    taken: str, why: str, offered: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=why) as refused:
        init_module(tmp_path, taken)
    assert offered in str(refused.value)
    assert not list(tmp_path.iterdir())


def test_the_folders_name_is_fixed_without_asking_but_never_to_a_taken_name(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "My-Project"
    folder.mkdir()
    assert module_name(None, folder) == "my_project"
    shadowing = tmp_path / "json"
    shadowing.mkdir()
    with pytest.raises(ValueError, match="standard library"):
        module_name(None, shadowing)


def test_cer_init_says_why_and_what_to_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cer.cli.init import cmd_init

    monkeypatch.chdir(tmp_path)
    assert cmd_init(argparse.Namespace(name="email")) == 2
    error = capsys.readouterr().err
    assert error.startswith("cer: error: 'email' is a module of the standard library")
    assert "cer init my_email" in error


def test_what_a_save_of_the_module_document_does_is_said_once() -> None:
    """The Watching section of tui.md says it; the other pages link there instead of
    saying it again, so that no two pages can disagree."""
    tui = (ROOT / "docs" / "tui.md").read_text(encoding="utf-8")
    watching = tui.split("\n## Watching\n", 1)[1].split("\n## ", 1)[0]
    assert "A save of `commonsformat.md` alone, between runs, does not" in watching
    assert "rerun the suite" in watching
    for page in (PAGE, ROOT / "README.md"):
        prose = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
        text = " ".join(prose.split())
        for sentence in re.split(r"(?<=[.)])\s", text):
            if "commonsformat.md" in sentence and re.search(r"rerun|re-judge", sentence):
                assert "tui.md#watching" in sentence, (page.name, sentence)

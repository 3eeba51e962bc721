"""Every command, option and `[tool.cer]` key the docs name exists in the code.

The docs are read as a user reads them: a command line in a code span or block that
starts with ``cer`` or ``cer-tui`` must parse its subcommand and options with the real
parsers; an option written alone in a code span must belong to one of them; every
``--cer-...`` option must be one the pytest plugin adds; and the key table of
configuration.md must list exactly the keys the options loader accepts.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import support
from cer import config as options_module
from cer import pytest_plugin
from cer.cli.main import build_parser
from cer.tui.__main__ import build_parser as build_tui_parser

DOCS = support.ROOT / "docs"
README = DOCS.parent / "README.md"
_ELLIPSES = frozenset({"…", "...", "|"})
_OPTION_PAGES = frozenset({"cli.md", "tui.md", "configuration.md", "reports.md"})
"""Pages whose lone ``--option`` code spans are options of ``cer`` or ``cer-tui`` (other
pages also name options of pytest, harnesses and benchmarks)."""


def _pages() -> list[Path]:
    return [*sorted(DOCS.glob("*.md")), README]


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    return {name for action in parser._actions for name in action.option_strings}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


class _Recorder:
    """Stands in for pytest's parser and group: records the options the plugin adds."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def getgroup(self, *_args: Any, **_kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **_kwargs: Any) -> None:
        self.names.update(names)

    def addini(self, *_args: Any, **_kwargs: Any) -> None:
        pass


def _plugin_options() -> set[str]:
    recorder = _Recorder()
    pytest_plugin.pytest_addoption(recorder)  # type: ignore[arg-type]
    return recorder.names


def _code(text: str) -> Iterator[str]:
    """Every line of every fenced block, and every inline code span."""
    for block in re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
        yield from block.splitlines()
    without_blocks = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M)
    yield from re.findall(r"`([^`\n]+)`", without_blocks)


def _command_lines() -> Iterator[tuple[str, list[str]]]:
    """``(page, argv)`` for each code line that is a ``cer`` or ``cer-tui`` command."""
    for page in _pages():
        for line in _code(page.read_text(encoding="utf-8")):
            line = line.strip().removeprefix("$ ").split(" #")[0]
            if not re.match(r"cer-tui( |$)|cer($| -| [a-z]+( |$))", line):
                continue
            try:
                argv = shlex.split(line)
            except ValueError:
                argv = line.split()
            cut = [i for i, token in enumerate(argv) if token in _ELLIPSES or "[" in token]
            if cut:
                argv = argv[: cut[0]]
            yield page.name, argv


def test_every_command_the_docs_run_exists() -> None:
    cer = build_parser()
    subcommands = _subcommands(cer)
    tui_options = _option_strings(build_tui_parser())
    missing = []
    seen = 0
    for page, argv in _command_lines():
        if argv[0] == "cer-tui":
            known = tui_options
            rest = argv[1:]
        else:
            if len(argv) > 1 and not argv[1].startswith("-"):
                if argv[1] not in subcommands:
                    missing.append(f"{page}: cer {argv[1]}")
                    continue
                known = _option_strings(subcommands[argv[1]])
                rest = argv[2:]
            else:
                known = _option_strings(cer)
                rest = argv[1:]
        seen += 1
        for token in rest:
            if token.startswith("-") and token not in {"-", "--"}:
                name = token.split("=")[0]
                if name not in known and not re.fullmatch(r"-j\d+", name):
                    missing.append(f"{page}: {' '.join(argv[:2])} … {name}")
    assert seen > 50
    assert missing == []


def test_every_option_the_docs_name_exists() -> None:
    cer = build_parser()
    known = _option_strings(cer) | _option_strings(build_tui_parser())
    for sub in _subcommands(cer).values():
        known |= _option_strings(sub)
    plugin = _plugin_options()
    missing = []
    for page in _pages():
        for span in _code(page.read_text(encoding="utf-8")):
            for name in re.findall(r"(?<![\w-])(--cer-[a-z-]+)", span):
                if name not in plugin:
                    missing.append(f"{page.name}: {name}")
            alone = re.fullmatch(r"(--[a-z][a-z0-9-]*)(?:[ =][A-Z_.|\[\]{},a-z0-9/'-]*)?", span)
            if (
                alone
                and not span.startswith("--cer-")
                and page.name in _OPTION_PAGES
                and alone.group(1) not in known
            ):
                missing.append(f"{page.name}: {alone.group(1)}")
    assert missing == []


def test_the_plugin_options_are_found() -> None:
    assert {"--cer-impl", "--cer-timeout", "--cer-history-path"} <= _plugin_options()


def test_the_key_table_lists_exactly_the_keys_the_loader_accepts() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    table = text.split("## Keys", 1)[1].split("\n\n", 2)[1]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M))
    assert documented == set(options_module._CONFIG_KEYS)


@pytest.mark.parametrize("word", ["reports", "nosuch"])
def test_an_unknown_subcommand_is_caught(word: str) -> None:
    assert word not in _subcommands(build_parser())

"""The README's opening: the two commands (the bundled example, the tests with their
cost), then straight after them a newcomer's whole path, and ``-n`` advice that says
when it pays."""

from __future__ import annotations

import re

import support

README = support.ROOT / "README.md"


def _opening() -> tuple[list[str], str]:
    """The shell blocks before the first rule, and the prose around them."""
    text = README.read_text(encoding="utf-8")
    head = text.split("\n---\n", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", head, re.S | re.M), head


def test_the_two_commands_come_first_and_the_newcomers_path_straight_after() -> None:
    blocks, _ = _opening()
    assert len(blocks) == 3
    example, tests, path = blocks
    assert "pip install -e ." in example and "cer run examples/calc/evals.toml" in example
    assert "pip install -e '.[test]'" in tests and "pytest" in tests
    commands = [line.split("#")[0].split()[0:2] for line in path.strip().splitlines()]
    assert commands == [["cer", "init"], ["cer", "run"], ["cer-tui"]]


def test_the_tests_cost_and_when_n_pays_are_said() -> None:
    _, head = _opening()
    assert "minutes of CPU time" in head
    assert "-n 2" in head and "pays" in head
    assert "18 s with `-n 2` against 3.7 s without" in head

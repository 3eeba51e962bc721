"""docs/matrix.md shows real output: each ``cer run`` of its console blocks is run from
the repository's root, and every line the block shows (``…`` lines stand for lines left
out, implementation hashes aside) must be what the command prints, in that order. The
Markdown summary the comparison writes is checked the same way against the block that
shows its beginning."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from support import ROOT, cer_in_process

DOC = ROOT / "docs" / "matrix.md"
_HASH = re.compile(r"@[0-9a-f]{10}\b")
_REPORT = re.compile(r"^(html|markdown)=(.+)$")

pytestmark = pytest.mark.slow


def _blocks(kind: str) -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    return [m.group(1).splitlines() for m in re.finditer(rf"```{kind}\n(.*?)\n```", text, re.S)]


def _command(lines: list[str]) -> tuple[str, list[str]]:
    """The command of a console block (its continuation lines joined) and the rest."""
    words, rest = lines[0].removeprefix("$ "), 1
    while words.endswith("\\"):
        words = words[:-1] + lines[rest].strip()
        rest += 1
    return words, lines[rest:]


def _in_order(shown: list[str], printed: list[str], where: str) -> None:
    """Every shown line but ``…`` is a printed line, in the same order."""
    position = 0
    wanted = [_HASH.sub("@HASH", line) for line in shown if line.strip() != "…"]
    got = [_HASH.sub("@HASH", line) for line in printed]
    for line in wanted:
        try:
            position = got.index(line, position) + 1
        except ValueError:
            raise AssertionError(f"{where}: not printed (in this order): {line!r}") from None


def test_every_cer_run_of_the_page_prints_what_it_shows(tmp_path: Path) -> None:
    runs = [block for block in _blocks("console") if block[0].startswith("$ cer run ")]
    assert len(runs) >= 2
    summaries = []
    for block in runs:
        command, shown = _command(block)
        argv = shlex.split(command)[1:]
        for index, word in enumerate(argv):
            found = _REPORT.match(word)
            if found is not None and argv[index - 1] == "--report":
                argv[index] = f"{found.group(1)}={tmp_path / found.group(2)}"
                if found.group(1) == "markdown":
                    summaries.append(tmp_path / found.group(2))
        done = cer_in_process([*argv, "--no-history"], ROOT)
        assert done.returncode == 1, done.stderr
        _in_order(shown, done.stdout.splitlines(), command)
    assert summaries and all(path.exists() for path in summaries)
    (page,) = [path.with_suffix(".html") for path in summaries]
    assert page.exists() and "<script" not in page.read_text(encoding="utf-8")
    (summary,) = _blocks("markdown")
    _in_order(summary, summaries[0].read_text(encoding="utf-8").splitlines(), "matrix.md")

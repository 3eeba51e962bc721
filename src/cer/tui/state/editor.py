"""The command cer-tui hands to the editor to open a file at its line (the one-line
``cer run`` that reproduces a case is :func:`cer.config.repro_command`), and how such
an outside program is launched.

The file can be the implementation's (``E``, from a traceback), so no name may turn
into an option or a command of the editor (``+silent !cmd`` is one for vi): the path is
made absolute, a name that still starts with ``+`` or ``-`` is refused, and editors that
take ``--`` get it before the path. docs/tui.md lists the argument vector per editor."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

Launcher = Callable[[Sequence[str]], int]
"""Runs an outside program (the editor) in the foreground and returns its exit status."""


def run_subprocess(command: Sequence[str]) -> int:
    """The launcher the app uses unless a test hands in another."""
    return subprocess.call(list(command))


EDITORS_WITH_GOTO = frozenset({"code", "codium", "code-insiders", "cursor", "subl", "zed"})
"""Editors that take ``path:line`` (after ``--goto``, except Sublime Text and Zed)."""

EDITORS_WITH_END_OF_OPTIONS = frozenset(
    {"vi", "vim", "nvim", "gvim", "view", "vim.basic", "vim.tiny", "nano", "micro", "hx", "kak"}
)
"""Editors that take ``+LINE -- PATH``: ``--`` ends their options, so the path after it
is a file whatever it holds."""


def editor_command(editor: str, path: Path, line: int | None) -> list[str]:
    """The command that opens ``path`` at ``line`` in ``editor`` (``$EDITOR`` may hold
    arguments): ``--goto PATH:LINE`` for the VS Code family, ``PATH:LINE`` for Sublime
    Text and Zed, ``+LINE -- PATH`` for the editors of :data:`EDITORS_WITH_END_OF_OPTIONS`,
    ``+LINE PATH`` for any other. ValueError for a name that could be read as an option
    or a command (``+...``, ``-...``), which an absolute path never is."""
    words = shlex.split(editor) or ["vi"]
    name = Path(words[0]).name
    target = str(Path(path).absolute())
    if target.startswith(("+", "-")) or "\n" in target:
        raise ValueError(f"the file name {target!r} could be read as an editor option")
    if line is not None and (type(line) is not int or line < 1):
        line = None
    if name in EDITORS_WITH_GOTO:
        flag = [] if name in {"subl", "zed"} else ["--goto"]
        return [*words, *flag, target if line is None else f"{target}:{line}"]
    at = [] if line is None else [f"+{line}"]
    end = ["--"] if name in EDITORS_WITH_END_OF_OPTIONS else []
    return [*words, *at, *end, target]

"""The command cer-tui hands to the editor to open a case at its line (the one-line
``cer run`` that reproduces a case is :func:`cer.session.repro_command`)."""

from __future__ import annotations

import shlex
from pathlib import Path

EDITORS_WITH_GOTO = frozenset({"code", "codium", "code-insiders", "cursor", "subl", "zed"})
"""Editors that take ``path:line`` (after ``--goto``, except Sublime Text and Zed)."""


def editor_command(editor: str, path: Path, line: int | None) -> list[str]:
    """The command that opens ``path`` at ``line`` in ``editor`` (``$EDITOR`` may hold
    arguments); editors of the VS Code family take ``--goto path:line``."""
    words = shlex.split(editor) or ["vi"]
    name = Path(words[0]).name
    if line is None:
        return [*words, str(path)]
    if name in EDITORS_WITH_GOTO:
        flag = [] if name in {"subl", "zed"} else ["--goto"]
        return [*words, *flag, f"{path}:{line}"]
    return [*words, f"+{line}", str(path)]

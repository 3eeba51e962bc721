"""The commands cer-tui hands to others: the editor at a case's line, and the one-line
``cer run`` that reproduces a case."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from cer.engine.options import RunOptions

IMPL_OPTIONS: dict[str, str] = {
    "python": "--impl",
    "command": "--impl-cmd",
    "command-per-case": "--impl-cmd-per-case",
}
"""The ``cer run`` option that names an implementation of each kind."""

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


def repro_command(suite_path: Path, options: RunOptions, case_name: str) -> str:
    """A one-line ``cer run`` that reruns one case with the same options."""
    return repro_command_many(suite_path, (options,), case_name)


def repro_command_many(
    suite_path: Path, implementations: Sequence[RunOptions], case_name: str
) -> str:
    """A one-line ``cer run`` that reruns one case against every implementation, each
    named by the option of its kind; the other settings are shared, so the first
    implementation's are used."""
    options = implementations[0]
    words = ["cer", "run", str(suite_path)]
    for each in implementations:
        words += [IMPL_OPTIONS.get(each.kind, "--impl"), each.impl]
    for path in options.paths:
        words += ["--path", path]
    defaults = RunOptions(impl=options.impl)
    if options.timeout != defaults.timeout:
        words += ["--timeout", f"{options.timeout:g}"]
    if options.isolation != defaults.isolation:
        words += ["--isolation", options.isolation]
    if options.max_memory is not None:
        words += ["--max-memory", str(options.max_memory)]
    words += ["--case", case_name]
    return shlex.join(words)

"""Finding the colour themes: ``.tcss`` files in the top-level ``themes/`` folder.

An installed wheel carries them in ``cer/data/themes``; a source checkout has them at
the repository's top. A theme file may name the built-in Textual theme its stock
widgets (footer, tabs, inputs) should follow with a ``/* base: textual-light */``
comment; without one they follow ``textual-dark``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import cer

DEFAULT_THEME = "dark"
_BASE = re.compile(r"/\*\s*base:\s*([\w-]+)\s*\*/")


@dataclass(frozen=True)
class ThemeFile:
    """One theme: its name (the file's stem), where it is and its Textual base."""

    name: str
    path: Path
    base: str


def theme_dirs() -> tuple[Path, ...]:
    """Where themes may live, the installed location first."""
    package = Path(cer.__file__).resolve().parent
    return (package / "data" / "themes", package.parents[1] / "themes")


def find_themes() -> dict[str, ThemeFile]:
    """Every theme found, by name, in a stable order: dark first, then by name."""
    found: dict[str, ThemeFile] = {}
    for folder in theme_dirs():
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.tcss")):
            if path.stem not in found:
                found[path.stem] = ThemeFile(path.stem, path, _base_of(path))
        if found:
            break
    ordered = sorted(found.values(), key=lambda t: (t.name != DEFAULT_THEME, t.name))
    return {theme.name: theme for theme in ordered}


def _base_of(path: Path) -> str:
    try:
        head = path.read_text(encoding="utf-8")[:500]
    except OSError:
        return "textual-dark"
    match = _BASE.search(head)
    return match.group(1) if match else "textual-dark"

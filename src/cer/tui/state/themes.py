"""The colour themes: ``.toml`` files in the top-level ``themes/`` folder, which the app
registers as Textual themes over its one stylesheet (``app.tcss``).

A theme file names the built-in Textual theme its stock widgets (footer, tabs, inputs)
follow (``base``), a one-line ``description``, and a ``[colors]`` table with every
colour the stylesheet uses as ``$cer-NAME``. An installed wheel carries the files in
``cer/data/themes``; a source checkout has them at the repository's top.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import cer

DEFAULT_THEME = "dark"
BASES: frozenset[str] = frozenset({"textual-dark", "textual-light"})
"""The built-in Textual themes a theme may take its stock widgets' colours from."""
COLOURS: tuple[str, ...] = (
    "background",
    "bar",
    "text",
    "muted",
    "rule",
    "accent",
    "pass",
    "fail",
    "errored",
    "skipped",
    "warning",
    "cursor",
    "cursor-blurred",
    "removed",
    "added",
    "removed-bg",
    "added-bg",
    "banner",
)
"""Every colour a theme defines; the stylesheet knows each one as ``$cer-NAME``."""


class ThemeError(ValueError):
    """A theme file that cannot be read or lacks what the stylesheet needs."""


@dataclass(frozen=True)
class ThemeFile:
    """One theme: its name (the file's stem), where it is, its Textual base, its
    description and its colours by name (without the ``cer-`` prefix)."""

    name: str
    path: Path
    base: str
    description: str
    colours: tuple[tuple[str, str], ...]

    @property
    def variables(self) -> dict[str, str]:
        """The colours as the stylesheet's variables (``cer-pass``...)."""
        return {f"cer-{name}": value for name, value in self.colours}


def theme_dirs() -> tuple[Path, ...]:
    """Where themes may live, the installed location first."""
    package = Path(cer.__file__).resolve().parent
    return (package / "data" / "themes", package.parents[1] / "themes")


def find_themes() -> dict[str, ThemeFile]:
    """Every theme found, by name, in a stable order: dark first, then by name.

    Raises ThemeError, naming the file, when one of them is malformed."""
    found: dict[str, ThemeFile] = {}
    for folder in theme_dirs():
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            if path.stem not in found:
                found[path.stem] = read_theme(path)
        if found:
            break
    ordered = sorted(found.values(), key=lambda t: (t.name != DEFAULT_THEME, t.name))
    return {theme.name: theme for theme in ordered}


def read_theme(path: Path) -> ThemeFile:
    """Read one theme file; ThemeError when it does not parse, names an unknown base,
    or lacks a colour."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ThemeError(f"{path}: cannot read the theme: {error}") from error
    base = data.get("base", "textual-dark")
    if base not in BASES:
        raise ThemeError(f"{path}: unknown base theme {base!r} (known: {', '.join(sorted(BASES))})")
    colours = data.get("colors", {})
    if not isinstance(colours, dict):
        raise ThemeError(f"{path}: [colors] must be a table")
    missing = [name for name in COLOURS if not isinstance(colours.get(name), str)]
    if missing:
        raise ThemeError(f"{path}: the theme lacks the colours {', '.join(missing)}")
    return ThemeFile(
        name=path.stem,
        path=path,
        base=str(base),
        description=str(data.get("description", "")),
        colours=tuple((name, str(colours[name])) for name in COLOURS),
    )

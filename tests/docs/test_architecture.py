"""docs/architecture.md names every package and module of ``src/cer``, and only those.

The page lists each package in a fenced block whose first line is its path
(``cer/engine/``) and whose entries are its modules (``plan.py``) and subpackages
(``command/``), one line each. A module added without its line, or a line left behind
by a module that went, fails here.
"""

from __future__ import annotations

import re

import support

ROOT = support.ROOT
SOURCE = ROOT / "src" / "cer"
PAGE = ROOT / "docs" / "architecture.md"
_ENTRY = re.compile(r"^  (\w+\.py|\w+/)(?:\s|$)")


def _listed() -> dict[str, set[str]]:
    """Each package block of the page: its path (``cer/engine``) and the entries it names."""
    blocks: dict[str, set[str]] = {}
    for block in re.findall(r"^```\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.S | re.M):
        head, *lines = block.splitlines()
        if re.fullmatch(r"cer(/\w+)*/", head):
            found = (_ENTRY.match(line) for line in lines)
            blocks[head.rstrip("/")] = {match.group(1) for match in found if match}
    return blocks


def _on_disk() -> dict[str, set[str]]:
    """Each package under ``src/cer``: its modules (``__init__.py`` aside, which the
    package's own line describes) and its subpackages."""
    packages: dict[str, set[str]] = {}
    for init in sorted(SOURCE.rglob("__init__.py")):
        folder = init.parent
        entries = {path.name for path in folder.glob("*.py") if path.name != "__init__.py"}
        entries |= {f"{sub.name}/" for sub in folder.iterdir() if (sub / "__init__.py").exists()}
        packages[folder.relative_to(SOURCE.parent).as_posix()] = entries
    return packages


def test_every_package_has_its_block() -> None:
    assert sorted(_listed()) == sorted(_on_disk())


def test_every_block_names_exactly_its_packages_modules() -> None:
    listed = _listed()
    differences = {
        package: (
            sorted(entries - listed.get(package, set())),
            sorted(listed.get(package, set()) - entries),
        )
        for package, entries in _on_disk().items()
        if entries != listed.get(package, set())
    }
    assert differences == {}, "(missing from the page, named but not in src/cer)"

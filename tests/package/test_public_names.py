"""``cer`` exports the names the documentation tells users to import, and the
documentation's Python imports them only from there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import cer
import support

DOCS = support.ROOT / "docs"
README = DOCS.parent / "README.md"


def _python_imports() -> list[tuple[str, str]]:
    """``(page, line)`` for every import of cer in the docs' Python blocks."""
    found = []
    for page in [*sorted(DOCS.glob("*.md")), README]:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M):
            for line in block.splitlines():
                if re.match(r"\s*(from cer\b|import cer\b)", line):
                    found.append((page.name, line.strip()))
    return found


def test_the_docs_import_only_from_cer() -> None:
    imports = _python_imports()
    assert imports, "the docs show how to use cer from Python"
    assert [(page, line) for page, line in imports if not line.startswith("from cer import ")] == []


def test_every_name_the_docs_import_is_exported() -> None:
    named = {
        name.strip()
        for _, line in _python_imports()
        for name in line.removeprefix("from cer import ").split(",")
    }
    assert named <= set(cer.__all__)


def test_every_exported_name_resolves() -> None:
    missing = [name for name in cer.__all__ if getattr(cer, name, None) is None]
    assert missing == []


def test_importing_cer_imports_nothing_else_of_it() -> None:
    code = "import sys, cer; print(sorted(m for m in sys.modules if m.startswith('cer')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['cer']"


def _cer_classes(annotation: object) -> set[type]:
    """The classes defined in cer that an annotation names, at any depth."""
    import typing

    found: set[type] = set()
    if isinstance(annotation, type) and annotation.__module__.startswith("cer."):
        found.add(annotation)
    for arg in typing.get_args(annotation):
        found |= _cer_classes(arg)
    return found


def test_every_type_a_public_function_takes_or_returns_is_exported() -> None:
    import inspect
    import typing

    needed: set[type] = set()
    for name in cer.__all__:
        value = getattr(cer, name)
        if inspect.isfunction(value):
            hints = typing.get_type_hints(value)
            needed |= _cer_classes(hints.get("return"))
    exported = {getattr(cer, name) for name in cer.__all__}
    assert needed, "the public functions return cer's own types"
    assert sorted(t.__qualname__ for t in needed - exported) == []


def test_the_package_ships_its_type_annotations() -> None:
    assert (Path(cer.__file__).parent / "py.typed").is_file()

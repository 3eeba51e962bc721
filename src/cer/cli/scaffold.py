"""``cer init [NAME]``: a first Commons Format module in the working directory.

It writes what a module needs to be run and watched, and nothing more: a
``commonsformat.md`` with an intent and a ``<constraints>`` block, an ``evals.toml``
with one case of each class (one of them a rejection), an implementation stub that
fails every case until it is written, and ``[tool.cer]`` in ``pyproject.toml`` naming
the suite and the implementation, so that a bare ``cer run`` and ``cer-tui`` work.

Nothing is ever overwritten: a file that exists is kept as it is, and a
``pyproject.toml`` gets ``[tool.cer]`` added (by tomlkit, every other byte kept) only
when it has none. docs/first-module.md walks through it.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["FUNCTION", "Written", "add_init_command", "init_module", "module_name"]

FUNCTION = "normalize"
"""The function the stub defines and ``[tool.cer] impl`` names."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Written:
    """What ``cer init`` did with one file."""

    path: Path
    action: Literal["wrote", "kept", "added [tool.cer] to", "kept [tool.cer] of"]


def module_name(name: str | None, folder: Path) -> str:
    """The module's name: ``name``, else the folder's, with ``-`` and spaces made
    ``_``; ValueError when that is not a Python module name."""
    raw = name if name is not None else folder.resolve().name
    candidate = re.sub(r"[-\s.]+", "_", raw.strip()).lower()
    if not _IDENTIFIER.fullmatch(candidate) or keyword.iskeyword(candidate):
        raise ValueError(
            f"{raw!r} cannot name a Python module: pass a NAME made of letters, digits, "
            "- and _ (cer init NAME)"
        )
    return candidate


def _document(name: str) -> str:
    return f"""# {name}

`{name}` tidies a line of text: it removes the spaces around it and collapses every run
of spaces inside it into one. It refuses text that holds nothing but spaces.

## API

```python
def {FUNCTION}(text: str) -> str
```

<constraints>
- trims: spaces at the start and the end of `text` are removed.
- collapses-spaces: every run of spaces inside `text` becomes one space.
- rejects-blank: empty text, or text of spaces only, raises ValueError mentioning "blank".
</constraints>
"""


def _suite(name: str) -> str:
    return f"""# The eval suite of {name}: every case calls {FUNCTION}(**input); the string it
# returns is observed as `value`, an exception it raises as `rejects = true` with its
# message (`error`) and class name (`error_type`).

commonsformat_evals = "0.2"
target = "{name}"

[[cases]]
name = "trims-both-ends"
category = "functional"
description = "Spaces around the text are removed."
input = {{ text = "  hello  " }}
expect = {{ value = "hello" }}
verifies = ["trims"]

[[adversarial]]
name = "rejects-blank-text"
category = "input-validation"
severity = "error"
description = "Text of spaces only is refused, not returned empty."
input = {{ text = "   " }}
expect = {{ rejects = true, error_type = "ValueError", error_includes = "blank" }}
verifies = ["rejects-blank"]

[[generator_adversary]]
name = "collapses-inner-runs"
category = "functional"
description = "A run of spaces between words becomes one space."
input = {{ text = "a   b    c" }}
expect = {{ value = "a b c" }}
verifies = ["collapses-spaces"]
"""


def _stub(name: str) -> str:
    return f'''"""{name}: see commonsformat.md for what it must do, evals.toml for the cases."""


def {FUNCTION}(text: str) -> str:
    raise NotImplementedError("{name}.{FUNCTION} is not written yet")
'''


def _write_new(path: Path, text: str) -> Written:
    try:
        with path.open("x", encoding="utf-8") as stream:
            stream.write(text)
    except FileExistsError:
        return Written(path, "kept")
    return Written(path, "wrote")


def _configure(path: Path, name: str) -> Written:
    """Add ``[tool.cer]`` to ``path`` (created when missing), unless it has one."""
    import tomlkit

    if not path.exists():
        document = tomlkit.document()
        created = True
    else:
        try:
            document = tomlkit.parse(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError) as exc:
            raise ValueError(f"{path}: cannot read it as TOML: {exc}") from exc
        created = False
        tool = document.get("tool")
        if tool is not None and "cer" in tool:
            return Written(path, "kept [tool.cer] of")
    table = tomlkit.table()
    table.add("suite", "evals.toml")
    table.add("impl", f"{name}:{FUNCTION}")
    tool_table: Any = document.get("tool")
    if tool_table is None:
        tool_table = tomlkit.table(is_super_table=True)
        document.add("tool", tool_table)
    tool_table.add("cer", table)
    text = tomlkit.dumps(document)
    if created:
        return _write_new(path, text)
    path.write_text(text, encoding="utf-8")
    return Written(path, "added [tool.cer] to")


def init_module(folder: Path, name: str | None = None) -> tuple[str, list[Written]]:
    """Write the module's files into ``folder``; the module's name and what was done
    with each file. ValueError for a NAME that is no module name or an unreadable
    ``pyproject.toml``."""
    module = module_name(name, folder)
    done = [
        _write_new(folder / "commonsformat.md", _document(module)),
        _write_new(folder / "evals.toml", _suite(module)),
        _write_new(folder / f"{module}.py", _stub(module)),
        _configure(folder / "pyproject.toml", module),
    ]
    return module, done


def add_init_command(commands: Any) -> None:
    """Add ``cer init``, with its handler, to ``commands``."""
    parser = commands.add_parser(
        "init",
        help="start a Commons Format module here",
        description="Write a first module into the working directory: commonsformat.md "
        "(intent and constraints), evals.toml (one case of each class, one a rejection), "
        "an implementation stub NAME.py and [tool.cer] in pyproject.toml. Never overwrites "
        "a file; prints the next command. Walked through in docs/first-module.md.",
    )
    parser.add_argument(
        "name",
        nargs="?",
        metavar="NAME",
        help="the module's name, a Python module name (default: the folder's name)",
    )
    parser.set_defaults(handler=cmd_init)


def cmd_init(args: argparse.Namespace) -> int:
    folder = Path.cwd()
    try:
        module, done = init_module(folder, args.name)
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"cer: error: {exc}\n")
        return 2
    for item in done:
        sys.stdout.write(f"{item.action} {item.path.name}\n")
    sys.stdout.write(
        f"\nnext: cer run          (red until {module}.py does what commonsformat.md says)\n"
        "      cer-tui          (the same, rerun on every save)\n"
    )
    return 0

"""``cer init [NAME]``: a first Commons Format module in the working directory.

It writes what a module needs to be run and watched, and nothing more: a
``commonsformat.md`` with an intent and a ``<constraints>`` block, an ``evals.toml``
with one case of each class (one of them a rejection), an implementation stub that
fails every case until it is written, and ``[tool.cer]`` in ``pyproject.toml`` naming
the suite and the implementation, so that a bare ``cer run`` and ``cer-tui`` work.
Everything is named for the module: ``NAME.py`` defines ``NAME(text)``, and the cases
are ``NAME-…``.

A NAME must be a Python identifier that no standard-library module has: ``json.py``
beside the suite would shadow ``json`` (or be shadowed by it), and the first import
would fail in a way that says nothing about the module. A NAME that is not an
identifier is refused with the fixed one offered; the folder's name, used when no NAME
is given, is fixed without asking.

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

__all__ = ["Written", "add_commands", "cmd_init", "init_module", "module_name"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Written:
    """What ``cer init`` did with one file."""

    path: Path
    action: Literal["wrote", "kept", "added [tool.cer] to", "kept [tool.cer] of"]


def _fixed(raw: str) -> str:
    """``raw`` made a module name: runs of other characters become ``_``, lower case,
    and a leading digit gets ``mod_`` before it ("" when nothing is left)."""
    candidate = re.sub(r"[^A-Za-z0-9_]+", "_", raw.strip()).strip("_").lower()
    if candidate[:1].isdigit():
        candidate = f"mod_{candidate}"
    return candidate


def _taken(name: str) -> str | None:
    """Why the identifier ``name`` cannot name the module, or None when it can."""
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"{name!r} is a Python keyword"
    if name in sys.stdlib_module_names:
        return (
            f"{name!r} is a module of the standard library: {name}.py here would shadow it, "
            f"or be shadowed by it"
        )
    return None


def _offer(name: str) -> str:
    """A name close to ``name`` that is free (for the message that refuses it)."""
    for candidate in (f"{name}_", f"my_{name}") if keyword.iskeyword(name) else (f"my_{name}",):
        if _IDENTIFIER.fullmatch(candidate) and _taken(candidate) is None:
            return candidate
    return f"my_{name}"


def module_name(name: str | None, folder: Path) -> str:
    """The module's name (and its function's): ``name``, else the folder's made into an
    identifier. ValueError, offering a name that works, when ``name`` is not an
    identifier, or when either is a keyword or a standard-library module."""
    given = name is not None
    raw = name if name is not None else folder.resolve().name
    candidate = raw if given else _fixed(raw)
    if not _IDENTIFIER.fullmatch(candidate):
        fixed = _fixed(raw)
        if fixed and _taken(fixed) is None:
            offer = f"cer init {fixed}"
        else:
            offer = "pass a NAME made of letters, digits and _ (cer init NAME)"
        what = "NAME" if given else "the folder's name"
        raise ValueError(
            f"{raw!r} cannot name a Python module ({what} must be an identifier: letters, "
            f"digits and _, not starting with a digit): {offer}"
        )
    problem = _taken(candidate)
    if problem is not None:
        raise ValueError(
            f"{problem}; {candidate!r} cannot name the module: cer init {_offer(candidate)}"
        )
    return candidate


def _document(name: str) -> str:
    return f"""# {name}

`{name}` tidies a line of text: it removes the spaces around it and collapses every run
of spaces inside it into one. It refuses text that holds nothing but spaces.

## API

```python
def {name}(text: str) -> str
```

<constraints>
- trims: spaces at the start and the end of `text` are removed.
- collapses-spaces: every run of spaces inside `text` becomes one space.
- rejects-blank: empty text, or text of spaces only, raises ValueError mentioning "blank".
</constraints>
"""


def _suite(name: str) -> str:
    dashed = name.replace("_", "-")
    return f"""# The eval suite of {name}: every case calls {name}(**input); the string it
# returns is observed as `value`, an exception it raises as `rejects = true` with its
# message (`error`) and class name (`error_type`).

commonsformat_evals = "0.2"
target = "{name}"

[[cases]]
name = "{dashed}-trims-both-ends"
category = "functional"
description = "Spaces around the text are removed."
input = {{ text = "  hello  " }}
expect = {{ value = "hello" }}
verifies = ["trims"]

[[adversarial]]
name = "{dashed}-rejects-blank-text"
category = "input-validation"
severity = "error"
description = "Text of spaces only is refused, not returned empty."
input = {{ text = "   " }}
expect = {{ rejects = true, error_type = "ValueError", error_includes = "blank" }}
verifies = ["rejects-blank"]

[[generator_adversary]]
name = "{dashed}-collapses-inner-runs"
category = "functional"
description = "A run of spaces between words becomes one space."
input = {{ text = "a   b    c" }}
expect = {{ value = "a b c" }}
verifies = ["collapses-spaces"]
"""


def _stub(name: str) -> str:
    return f'''"""{name}: see commonsformat.md for what it must do, evals.toml for the cases."""


def {name}(text: str) -> str:
    raise NotImplementedError("{name}.{name} is not written yet")
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
    table.add("impl", f"{name}:{name}")
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
    with each file. ValueError for a NAME that cannot name a module (see
    :func:`module_name`) or an unreadable ``pyproject.toml``."""
    module = module_name(name, folder)
    done = [
        _write_new(folder / "commonsformat.md", _document(module)),
        _write_new(folder / "evals.toml", _suite(module)),
        _write_new(folder / f"{module}.py", _stub(module)),
        _configure(folder / "pyproject.toml", module),
    ]
    return module, done


def add_commands(commands: Any) -> None:
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
        help="the module's name and its function's: a Python identifier that is no "
        "standard-library module (default: the folder's name)",
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

"""What to watch for a suite and its implementation, and which changes matter.

Directories are watched without recursion: an implementation that lives at a project's
top level must not make the watcher descend into a virtualenv. Folders the user names
with ``--watch`` and the suite's ``fixtures/`` are expanded to their subfolders instead.
Editors save through temporary and swap files; those, and ``__pycache__``, ``.git`` and
``.cer``, never trigger a run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from watchfiles import Change

from cer.constraints import MODULE_DOC
from cer.model import Suite, same_definition

IGNORED_DIRS: frozenset[str] = frozenset(
    {"__pycache__", ".git", ".cer", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)
IGNORED_SUFFIXES: tuple[str, ...] = (
    ".swp",
    ".swo",
    ".swx",
    ".swpx",
    ".tmp",
    ".pyc",
    ".pyo",
    "~",
    ".bak",
    ".orig",
)
MAX_EXPANDED_DIRS = 2000
"""A bound on the subfolders one ``--watch`` folder expands to."""

DEBOUNCE_MS = 50
STEP_MS = 10


def is_ignored(path: str) -> bool:
    """Whether a changed path is noise: caches, VCS folders, editor swap files."""
    parts = Path(path).parts
    if any(part in IGNORED_DIRS for part in parts):
        return True
    name = parts[-1] if parts else ""
    if name.endswith(IGNORED_SUFFIXES):
        return True
    if name.startswith(".#") or (name.startswith("#") and name.endswith("#")):
        return True
    # vim probes a folder's writability with a file called 4913 (and 5036, ...).
    return name.isdigit()


@dataclass(frozen=True)
class WatchPlan:
    """The folders handed to the watcher and the rules that pick relevant changes."""

    suite: Path
    fixtures: Path
    sources: frozenset[Path]
    extra: tuple[Path, ...]
    directories: tuple[Path, ...]
    import_dirs: tuple[Path, ...] = ()
    """Until the runner has reported the implementation's files (it may never have
    imported), any ``.py`` file in these folders counts as the implementation."""

    @classmethod
    def build(
        cls,
        suite: Path,
        sources: Iterable[str | Path] = (),
        extra: Iterable[str | Path] = (),
        import_dirs: Iterable[str | Path] = (),
        fallback: bool | None = None,
    ) -> WatchPlan:
        """The plan for ``suite``, the implementations' ``sources`` and ``extra`` paths.

        ``import_dirs`` stand in for the implementation's files when ``fallback`` is
        true; by default (None) when no source file is known at all. With several
        implementations the app says whether one of them has not reported its files.
        """
        suite = suite.resolve()
        fixtures = suite.parent / "fixtures"
        source_paths = frozenset(Path(p).resolve() for p in sources)
        extra_paths = tuple(Path(p).resolve() for p in extra)
        directories: dict[Path, None] = {suite.parent: None}
        for source in sorted(source_paths):
            directories[source.parent] = None
        if fallback is None:
            fallback = not source_paths
        folders: tuple[Path, ...] = ()
        if fallback:
            folders = tuple(Path(p).resolve() for p in import_dirs if Path(p).is_dir())
            for folder in folders:
                directories[folder] = None
        for tree in (fixtures, *extra_paths):
            if tree.is_dir():
                for folder in _walk(tree):
                    directories[folder] = None
            elif tree.exists():
                directories[tree.parent] = None
        existing = tuple(d for d in directories if d.is_dir())
        return cls(suite, fixtures, source_paths, extra_paths, existing, folders)

    @property
    def module_doc(self) -> Path:
        """The module's ``commonsformat.md`` beside the suite: its constraints feed the
        Coverage pane, so a change to it counts too."""
        return self.suite.parent / MODULE_DOC

    @property
    def path_count(self) -> int:
        """How many things are watched, as the header tells it: suite, fixtures,
        implementation files and extra paths."""
        count = 1 + len(self.sources) + len(self.extra)
        if self.fixtures.is_dir():
            count += 1
        return count

    def is_relevant(self, path: str | Path) -> bool:
        """Whether a change to ``path`` should rerun the suite."""
        text = str(path)
        if is_ignored(text):
            return False
        changed = Path(text)
        if changed in (self.suite, self.module_doc):
            return True
        if changed in self.sources:
            return True
        if _is_within(changed, self.fixtures):
            return True
        if any(changed == extra or _is_within(changed, extra) for extra in self.extra):
            return True
        # A new or renamed module beside the implementation's own files.
        if changed.suffix != ".py":
            return False
        if any(changed.parent == source.parent for source in self.sources):
            return True
        return any(_is_within(changed, folder) for folder in self.import_dirs)

    def accepts(self, change: Change, path: str) -> bool:
        """The watchfiles filter: drop noise before the debounce window closes."""
        return self.is_relevant(path)

    def describe(self, path: str | Path, base: Path | None = None) -> str:
        """A short name for a changed path, relative to ``base`` when it is inside it."""
        changed = Path(path)
        root = (base or Path.cwd()).resolve()
        try:
            return str(changed.relative_to(root))
        except ValueError:
            return str(changed)


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _walk(tree: Path) -> list[Path]:
    """``tree`` and its subfolders, minus ignored ones, up to a bound."""
    found = [tree]
    for root, dirs, _files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.startswith("."))
        for name in dirs:
            found.append(Path(root) / name)
            if len(found) >= MAX_EXPANDED_DIRS:
                return found
    return found


def edited_cases(before: Suite, after: Suite) -> frozenset[str]:
    """The cases of ``after`` whose definition is new or differs from the same-named
    case of ``before``: what an edit of the suite file asks to run again (a case that
    only moved, because a case above it grew or shrank, did not change)."""
    # A reload takes the cases of a group whose text did not change as they were (the
    # very objects, cer.suite.loader.TableMemo): those are told at once, and when the
    # cases sit where they sat, by going through both suites side by side.
    if len(before.cases) == len(after.cases):
        changed = [
            (old, case)
            for old, case in zip(before.cases, after.cases, strict=True)
            if old is not case
        ]
        if all(old.name == case.name for old, case in changed):
            return frozenset(case.name for old, case in changed if not same_definition(old, case))
    previous = {case.name: case for case in before.cases}
    return frozenset(
        case.name
        for case in after.cases
        if (old := previous.get(case.name)) is not case
        and (old is None or not same_definition(old, case))
    )

"""Fixture files a case's input names: ``fixture://NAME`` strings, resolved to paths
inside the module's ``fixtures/`` folder, never outside it."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

__all__ = ["FIXTURE_SCHEME", "resolve_fixtures"]

FIXTURE_SCHEME = "fixture://"
"""Prefix of an input string that names a file in the module's ``fixtures/`` folder."""


def resolve_fixtures(value: Any, fixtures_dir: Path) -> tuple[Any, tuple[str, ...]]:
    """Copy ``value`` with every ``fixture://NAME`` string replaced by a file path.

    The replacement is the absolute path of ``fixtures_dir / NAME``. The second item
    lists, once each and in order of appearance, the names that are not existing files;
    a name that would leave the fixtures folder (absolute, or holding ``..``) is listed
    too and left unreplaced, so that no path outside the folder is ever handed on.
    """
    missing: list[str] = []
    resolved = _resolve(value, Path(fixtures_dir), missing)
    return resolved, tuple(missing)


def _resolve(value: Any, fixtures_dir: Path, missing: list[str]) -> Any:
    """Recursive step of :func:`resolve_fixtures`; appends bad names to ``missing``."""
    if isinstance(value, str):
        if not value.startswith(FIXTURE_SCHEME):
            return value
        name = value[len(FIXTURE_SCHEME) :]
        if not _is_safe_fixture_name(name):
            if name not in missing:
                missing.append(name)
            return value
        target = os.path.abspath(fixtures_dir / name)
        if not os.path.isfile(target) and name not in missing:
            missing.append(name)
        return target
    if isinstance(value, dict):
        return {key: _resolve(item, fixtures_dir, missing) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, fixtures_dir, missing) for item in value]
    if isinstance(value, tuple):
        return tuple(_resolve(item, fixtures_dir, missing) for item in value)
    return value


def _is_safe_fixture_name(name: str) -> bool:
    """Whether ``name`` is a relative path that stays inside the fixtures folder."""
    if not name.strip() or "\x00" in name:
        return False
    for flavour in (PurePosixPath(name), PureWindowsPath(name)):
        if flavour.is_absolute() or flavour.anchor or ".." in flavour.parts:
            return False
    return True

"""Locate the data files cer ships beside its code (``schema.sql``).

A wheel carries them under ``cer/data/`` (pyproject force-includes them there); a source
checkout or an editable install reads the repository's top-level copies, so that the
repository's ``schema.sql`` stays the single source of truth in both cases.
"""

from __future__ import annotations

from pathlib import Path

import cer

__all__ = ["ResourceMissing", "data_file", "schema_sql", "schema_sql_path"]


class ResourceMissing(FileNotFoundError):
    """A data file cer needs is in neither the installed nor the source location."""


def _candidates(name: str) -> tuple[Path, ...]:
    package = Path(cer.__file__).resolve().parent
    return (package / "data" / name, package.parents[1] / name)


def data_file(name: str) -> Path:
    """The path of the shipped data file ``name``; ResourceMissing when there is none."""
    candidates = _candidates(name)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise ResourceMissing(f"cer's {name} is missing (looked in {looked})")


def schema_sql_path() -> Path:
    """Where ``schema.sql`` is: the declared shape of a run's results."""
    return data_file("schema.sql")


def schema_sql() -> str:
    """The text of ``schema.sql``."""
    return schema_sql_path().read_text(encoding="utf-8")

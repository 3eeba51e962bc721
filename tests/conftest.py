"""Fixtures shared by the tests (their helpers are in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import Module


@pytest.fixture
def module(tmp_path: Path) -> Module:
    return Module(tmp_path)

"""Shared fixtures of the UI tests: async tests run on asyncio through anyio's plugin,
so no other async plugin is needed (the test modules mark themselves ``anyio``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"

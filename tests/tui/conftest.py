"""Shared fixtures of the UI tests: async tests run on asyncio through anyio's plugin."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the coroutine tests of this folder for anyio, so no other plugin is needed."""
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and _is_coroutine(function) and "tui" in str(item.path):
            item.add_marker(pytest.mark.anyio)


def _is_coroutine(function: object) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function)

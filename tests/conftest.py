"""Fixtures shared by the tests (their helpers are in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import Module


@pytest.fixture
def module(tmp_path: Path) -> Module:
    return Module(tmp_path)


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests read cer's output as it is outside GitHub Actions, wherever they run
    (under GitHub Actions cer pauses workflow commands around it: see
    tests/hostile/test_workflow_commands.py)."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture(autouse=True)
def _own_outputs_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each test keeps its own record of the files cer wrote (cer.readset), not the
    user's."""
    record = tmp_path_factory.mktemp("state") / "outputs"
    monkeypatch.setenv("CER_OUTPUTS_RECORD", str(record))

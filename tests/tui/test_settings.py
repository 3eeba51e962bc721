"""What cer-tui was started with: one frozen value, its first implementation's options
standing for the run as a whole."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cer.engine.options import RunOptions
from cer.suite.selection import Selection
from cer.tui.app import create_app
from cer.tui.settings import TuiSettings

from .helpers import FakeRunner, fixed_loader, triage_suite

FIRST = RunOptions(impl="ref:evaluate", selection=Selection(case_globs=("adds-*",)))
OTHER = RunOptions(impl="other:evaluate")


def settings(*implementations: RunOptions) -> TuiSettings:
    return TuiSettings(
        suite_path=Path("evals.toml"),
        implementations=implementations,
        labels=tuple(str(i) for i, _ in enumerate(implementations)),
        baseline=None,
        watch=False,
        extra_watch=(),
        history=None,
        theme="dark",
        run=FakeRunner(),
        load=fixed_loader(triage_suite()),
        launcher=lambda command: 0,
    )


def test_the_first_implementation_stands_for_the_run() -> None:
    made = settings(FIRST, OTHER)
    assert made.options is FIRST
    assert made.base_selection == FIRST.selection


def test_settings_need_an_implementation_and_never_change() -> None:
    with pytest.raises(ValueError, match="at least one implementation"):
        settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings(FIRST).watch = True  # type: ignore[misc]


def test_create_app_fills_in_the_defaults() -> None:
    app = create_app(Path("evals.toml"), FIRST, run=FakeRunner(), extra_watch=["data"])
    made = app.settings
    assert made.implementations == (FIRST,)
    assert made.labels == ("ref",)  # as cer run heads its matrix column
    assert made.extra_watch == (Path("data"),)
    assert made.watch and made.history is None and made.baseline is None

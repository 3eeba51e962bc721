"""The sandbox's world: its trial, started by the ``cer`` program before the command
line is imported (:func:`cer.cli.entry.start_trial`), answers exactly as the trial
:func:`cer.sandbox.world.probe` starts itself: it is taken only when it is that trial."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cer.cli import entry
from cer.sandbox import world


@pytest.fixture(autouse=True)
def no_early_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(world.DISABLE_ENV, raising=False)
    monkeypatch.setattr(world, "EARLY_TRIAL", None)


def test_the_early_trial_is_the_one_probe_would_start() -> None:
    early = entry.start_trial(["run", "evals.toml", "--impl", "m:f"])
    if not sys.platform.startswith("linux"):
        assert early is None
        return
    assert early is not None
    trial, key = early
    assert trial.args == world.trial_command()
    assert key == (os.geteuid(), "")
    trial.communicate(timeout=20)
    assert entry.WORLD_DISABLE_ENV == world.DISABLE_ENV


@pytest.mark.parametrize(
    "argv",
    [["run", "--sandbox", "off", "e.toml"], ["run", "--sandbox=off"]],
)
def test_no_early_trial_when_the_run_would_not_try(argv: list[str]) -> None:
    assert entry.start_trial(argv) is None


def test_no_early_trial_with_namespaces_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(world.DISABLE_ENV, "1")
    assert entry.start_trial(["run", "e.toml"]) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux namespaces")
def test_probe_takes_the_early_trial_and_answers_as_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = world.probe()  # a trial of its own
    early = entry.start_trial(["run", "e.toml"])
    assert early is not None
    world.EARLY_TRIAL, world.EARLY_TRIAL_KEY = early
    popen = subprocess.Popen
    own: list[object] = []

    def counted(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        own.append(args)
        return popen(*args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(subprocess, "Popen", counted)
    assert world.probe() == expected
    assert own == []
    assert world.EARLY_TRIAL is None
    assert early[0].returncode is not None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux namespaces")
@pytest.mark.parametrize("changed", ["command", "user or setting"])
def test_a_trial_started_otherwise_is_left_to_end_and_a_new_one_runs(
    monkeypatch: pytest.MonkeyPatch, changed: str
) -> None:
    expected = world.probe()
    if changed == "command":
        other = subprocess.Popen(
            [sys.executable, "-c", "raise SystemExit(3)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        world.EARLY_TRIAL, world.EARLY_TRIAL_KEY = other, (os.geteuid(), "")
    else:
        early = entry.start_trial(["run", "e.toml"])
        assert early is not None
        other = early[0]
        world.EARLY_TRIAL, world.EARLY_TRIAL_KEY = other, (os.geteuid(), "was set")
    popen = subprocess.Popen
    own: list[object] = []

    def counted(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        own.append(args)
        return popen(*args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(subprocess, "Popen", counted)
    assert world.probe() == expected
    assert len(own) == 1
    assert world.EARLY_TRIAL is None
    assert other.returncode is not None  # ended, and waited for


def test_probe_discards_the_early_trial_when_namespaces_are_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE)
    world.EARLY_TRIAL, world.EARLY_TRIAL_KEY = other, (os.geteuid(), "")
    monkeypatch.setenv(world.DISABLE_ENV, "1")
    assert world.probe() == f"namespaces turned off ({world.DISABLE_ENV} is set)"
    assert world.EARLY_TRIAL is None
    assert other.returncode is not None

"""Helpers the tests share: build a module folder (suite + implementation) in a temporary
directory, and read a run back. Imported by the tests; conftest.py only holds fixtures."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.model import RunResult, Status
from cer.suite import load_suite

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


class Module:
    """A throwaway Commons Format module: an evals.toml and implementation files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.counter = 0

    def suite(self, text: str) -> Path:
        path = self.root / "evals.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    def impl(self, source: str, name: str | None = None) -> str:
        """Write an implementation module; returns its module name."""
        if name is None:
            self.counter += 1
            name = f"impl_{self.counter}"
        (self.root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        return name

    def run(self, impl: str, **options: Any) -> RunResult:
        options.setdefault("timeout", 5.0)
        return run_suite(load_suite(self.root / "evals.toml"), RunOptions(impl=impl, **options))


def statuses(run: RunResult) -> list[tuple[str, Status]]:
    return [(r.case_name, r.status) for r in run.results]


def single_case_suite(expect: str, input_: str = "{}", category: str = "functional") -> str:
    """A one-case suite text with the given inline tables."""
    return (
        'commonsformat_evals = "0.2"\ntarget = "t"\n\n[[cases]]\nname = "only"\n'
        f'category = "{category}"\ninput = {input_}\nexpect = {expect}\n'
    )


RunOne = Callable[..., RunResult]

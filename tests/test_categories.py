"""Category support: built-ins run, unknown ones skip, users and plugins extend."""

from __future__ import annotations

import pytest

from cer import categories
from cer.categories import CALL, CategoryConfigError, build_registry
from cer.model import Status
from support import Module

DOUBLE = "def f(x):\n    return x * 2\n"

SUITE = """
commonsformat_evals = "0.2"
[[adversarial]]
name = "twice"
category = "pairwise"
input = { x = 3 }
expect = { output = [6, 6] }
"""


def test_builtin_categories_use_the_call_model() -> None:
    registry = build_registry(entry_points=False)
    for name in (
        "functional",
        "interface",
        "input-validation",
        "failure-mode",
        "timing",
        "resource",
    ):
        assert registry.model_for(name) == CALL
    assert registry.model_for("concurrency") is None


def test_user_mapping_must_name_something_real() -> None:
    assert build_registry({"concurrency": "functional"}).model_for("concurrency") == CALL
    with pytest.raises(CategoryConfigError, match="nonsense"):
        build_registry({"concurrency": "nonsense"})


def test_entry_point_model_runs_in_the_case_process(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    module.impl(
        """
        class Twice:
            def execute(self, invoke, case):
                return [invoke(case.input), invoke({"x": case.input["x"]})]
        MODEL = Twice()
        """,
        name="pairwise_model",
    )
    monkeypatch.setattr(
        categories,
        "_entry_point_models",
        lambda: {"pairwise": "entrypoint:pairwise_model:MODEL"},
    )
    module.suite(SUITE)
    run = module.run(f"{module.impl(DOUBLE)}:f")
    assert run.results[0].status is Status.PASS


def test_without_a_plugin_the_category_is_skipped(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(categories, "_entry_point_models", lambda: {})
    module.suite(SUITE)
    run = module.run(f"{module.impl(DOUBLE)}:f")
    assert run.results[0].status is Status.SKIPPED
    assert run.results[0].reason == "category not supported: pairwise"

"""Scaffolds the hostile tests of the pytest plugin, the GitHub Action and approval
share: the suites and implementations they run, the environment a nested pytest runs
in, and a drafts file with one draft to approve."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import tomlkit

from cer.constraints import suite_coverage
from cer.review.derive import derive
from cer.review.drafts import add_drafts, drafts_path
from cer.suite.loader import load_suite

DOUBLING_SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "good"
category = "functional"
input = { x = 1 }
expect = { output = 2 }

[[cases]]
name = "bad"
category = "functional"
input = { x = 2 }
expect = { output = 4 }

[[cases]]
name = "boom"
category = "functional"
input = { x = 3 }
expect = { output = 6 }
"""
"""Three cases a :data:`DOUBLING_IMPL` passes, fails and errors in turn."""

DOUBLING_IMPL = """
def double(x):
    if x == 3:
        raise RuntimeError("kaboom")
    return 5 if x == 2 else x * 2
"""

ONE_CASE_SUITE = """\
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "doubles"
category = "functional"
input = { x = 2 }
expect = { output = 4 }
"""

APPROVAL_SUITE = """\
commonsformat_evals = "0.2"

[[cases]]
name = "one"
category = "functional"
input = { expr = "1" }
expect = { value = 1 }
"""
"""A suite whose coverage leaves a draft to derive."""


def pytest_env(*, no_color: bool = True) -> dict[str, str]:
    """The environment of a nested pytest: this one's, without what pytest and
    coverage set for their own run (and without colour, unless told)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    if no_color:
        env["NO_COLOR"] = "1"
    return env


def write_draft(
    folder: Path, expr: str, observed: dict[str, Any] | None = None
) -> tuple[Path, str]:
    """:data:`APPROVAL_SUITE` in ``folder``, and a drafts file whose one draft has the
    input ``expr`` and no expectation (and ``observed``, when given); the suite's path
    and the draft's name."""
    suite_path = folder / "evals.toml"
    suite_path.write_text(APPROVAL_SUITE, encoding="utf-8")
    (folder / "commonsformat.md").write_text(
        "<constraints>\n- tidy: the output is readable\n</constraints>\n", encoding="utf-8"
    )
    suite = load_suite(suite_path)
    coverage = suite_coverage(suite)
    assert coverage is not None
    path = drafts_path(suite_path)
    add_drafts(path, derive(suite, coverage).drafts)
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    (entry,) = document["drafts"]
    entry["input"] = {"expr": expr}
    entry.pop("expect", None)
    if observed is not None:
        entry["observed"] = observed
        entry["observed_from"] = "calc:evaluate"
    path.write_text(document.as_string(), encoding="utf-8")
    return suite_path, str(entry["name"])

"""Planning a run: fixture references anywhere in a case's input are resolved before the
case runs, and a missing one errors the case without running it."""

from __future__ import annotations

from pathlib import Path

from cer.categories import build_registry
from cer.engine.options import RunOptions
from cer.engine.plan import plan
from cer.model import Status
from cer.suite.loader import load_suite
from support import Module

SUITE = """
commonsformat_evals = "0.2"
target = "t"

[[cases]]
name = "nested"
category = "functional"
input = { a = [1, { p = "fixture://here.txt" }], b = "plain" }
expect = { output = 1 }

[[cases]]
name = "missing"
category = "functional"
input = { a = { b = ["fixture://absent.txt"] } }
expect = { output = 1 }

[[cases]]
name = "none"
category = "functional"
input = { a = ["fixture:/not-a-reference", { b = "x" }] }
expect = { output = 1 }
"""


def test_fixture_references_are_resolved_wherever_they_are(tmp_path: Path) -> None:
    module = Module(tmp_path)
    module.suite(SUITE)
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "here.txt").write_text("hi", encoding="utf-8")
    suite = load_suite(tmp_path / "evals.toml")
    runnable, decided = plan(suite, RunOptions(impl="m:f"), build_registry({}))
    by_name = {item.case.name: item for item in runnable}
    here = str((tmp_path / "fixtures" / "here.txt").resolve())
    assert by_name["nested"].input == {"a": [1, {"p": here}], "b": "plain"}
    assert by_name["none"].input == {"a": ["fixture:/not-a-reference", {"b": "x"}]}
    (missing,) = decided
    assert missing.case_name == "missing"
    assert missing.status is Status.ERRORED
    assert missing.reason is not None and missing.reason.startswith("missing fixture: absent.txt")

"""One call of the implementation inside the current process (what a case's process
and a worker without isolation do): builtins put back, modules imported by the case
reported, and the kept copies that make both cheap renewed whenever they changed."""

from __future__ import annotations

import builtins
import sys
from pathlib import Path
from typing import Any

import pytest

from cer import plaindata
from cer.worker import call
from cer.worker.call import StdlibTrees, execute_case, keep_state
from cer.worker.target import Target
from cer.worker.versions import KeptCopy, dict_version_reader


def _case(**input_: Any) -> dict[str, Any]:
    return {
        "name": "c",
        "case_class": "functional",
        "category": "functional",
        "tags": [],
        "model": "call",
        "input": input_,
    }


def test_a_kept_copy_is_renewed_exactly_when_its_dict_changed() -> None:
    mapping: dict[str, Any] = {"a": 1}
    kept = KeptCopy(mapping)
    first = kept.current()
    assert first == {"a": 1} and first is not mapping
    assert not kept.moved() or dict_version_reader() is None
    if dict_version_reader() is not None:
        assert kept.current() is first  # unchanged: nothing copied again
    mapping["b"] = 2
    assert kept.moved()
    assert kept.current() == {"a": 1, "b": 2}
    replaced = object()
    mapping["a"] = replaced
    assert kept.moved()
    assert kept.current()["a"] is replaced


def test_builtins_rebound_by_a_case_are_put_back_before_its_result_is_encoded() -> None:
    keep_state()
    original_len, original_type = builtins.len, builtins.type

    def rebinds(**_: Any) -> list[int]:
        builtins.len = lambda obj: 0  # type: ignore[assignment]
        builtins.type = lambda *args: dict  # type: ignore[assignment]
        builtins.cer_probe_added = True  # type: ignore[attr-defined]
        return [1, 2, 3]

    payload = plaindata.loads(execute_case(Target(rebinds), _case()))
    assert builtins.len is original_len and builtins.type is original_type
    assert not hasattr(builtins, "cer_probe_added")
    assert payload == {"k": "ret", "v": [1, 2, 3]}


def test_builtins_changed_between_cases_are_the_state_the_next_case_gets_back() -> None:
    keep_state()
    builtins.cer_probe_between = 1  # type: ignore[attr-defined]
    try:

        def removes(**_: Any) -> int:
            del builtins.cer_probe_between  # type: ignore[attr-defined]
            return 1

        execute_case(Target(removes), _case())
        assert builtins.cer_probe_between == 1  # type: ignore[attr-defined]
    finally:
        del builtins.cer_probe_between  # type: ignore[attr-defined]


def test_a_module_a_case_imports_is_reported_and_an_unchanged_case_reports_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cer_lazy_probe.py").write_text("VALUE = 7\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(call, "STDLIB", [StdlibTrees.find()])
    keep_state()

    def imports(**_: Any) -> int:
        import cer_lazy_probe  # type: ignore[import-not-found]

        return int(cer_lazy_probe.VALUE)

    try:
        payload = plaindata.loads(execute_case(Target(imports), _case()))
        assert payload["v"] == 7
        assert [Path(f).name for f in payload["files"]] == ["cer_lazy_probe.py"]
        again = plaindata.loads(execute_case(Target(imports), _case()))
        assert "files" not in again  # imported already: nothing new
    finally:
        sys.modules.pop("cer_lazy_probe", None)

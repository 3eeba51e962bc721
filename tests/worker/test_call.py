"""One call of the implementation inside the current process (what a case's process
and a worker without isolation do): builtins put back, modules imported by the case
reported, and the kept copies that make both cheap renewed whenever they changed."""

from __future__ import annotations

import builtins
import contextlib
import inspect
import itertools
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cer.wire import plaindata
from cer.worker import call
from cer.worker.call import StdlibTrees, execute_case, keep_state
from cer.worker.target import Shape, Target
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


def _signatures() -> list[inspect.Signature]:
    """Every signature of up to four parameters named from a small pool, each kind with
    and without a default where that is allowed."""
    parameter = inspect.Parameter
    kinds = [
        (parameter.POSITIONAL_ONLY, False),
        (parameter.POSITIONAL_ONLY, True),
        (parameter.POSITIONAL_OR_KEYWORD, False),
        (parameter.POSITIONAL_OR_KEYWORD, True),
        (parameter.VAR_POSITIONAL, False),
        (parameter.KEYWORD_ONLY, False),
        (parameter.KEYWORD_ONLY, True),
        (parameter.VAR_KEYWORD, False),
    ]
    found = []
    for size in range(5):
        for combo in itertools.product(kinds, repeat=size):
            params = [
                parameter(name, kind, default=1 if has_default else parameter.empty)
                for name, (kind, has_default) in zip("abcd", combo, strict=False)
            ]
            try:
                found.append(inspect.Signature(params))
            except ValueError:
                continue  # not a valid order of parameters
    return found


def test_a_shape_decides_exactly_as_signature_bind_does() -> None:
    inputs = [
        dict.fromkeys(keys, 0)
        for size in range(4)
        for keys in itertools.combinations(["a", "b", "c", "d", "x-y"], size)
    ]
    signatures = _signatures()
    assert len(signatures) > 500
    for signature in signatures:
        shape = Shape(signature)
        try:
            signature.bind({})
            one = True
        except TypeError:
            one = False
        assert shape.one_argument == one, signature
        for data in inputs:
            try:
                signature.bind(**data)
                keywords = True
            except TypeError:
                keywords = False
            assert shape.takes_keywords(data) == keywords, (signature, data)


class _Adder:
    def run_case(self, case: Any) -> int:
        return int(case.input["a"]) + 1


class _Strict:
    def run_case(self, case: Any, extra: int) -> int:
        return extra


def test_run_case_methods_are_called_with_the_case_and_a_wrong_signature_is_a_setup_failure() -> (
    None
):
    assert plaindata.loads(execute_case(Target(_Adder()), _case(a=2))) == {"k": "ret", "v": 3}
    assert plaindata.loads(execute_case(Target(_Adder), _case(a=5))) == {"k": "ret", "v": 6}
    failed = plaindata.loads(execute_case(Target(_Strict()), _case(a=1)))
    assert failed["k"] == "setup" and "missing a required argument: 'extra'" in failed["msg"]


def test_a_function_gets_the_input_as_keywords_when_it_can_else_as_one_table() -> None:
    def keywords(a: int, b: int = 10) -> int:
        return a + b

    def table(data: dict[str, int]) -> int:
        return data["a"] * 100

    def neither(a: int, b: int, c: int) -> int:
        return a

    assert plaindata.loads(execute_case(Target(keywords), _case(a=1)))["v"] == 11
    assert plaindata.loads(execute_case(Target(table), _case(a=3)))["v"] == 300
    failed = plaindata.loads(execute_case(Target(neither), _case(a=1)))
    assert failed["k"] == "misfit"
    assert "does not fit the signature of" in failed["msg"]
    assert "missing `b`, `c`" in failed["msg"]


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfds here")
def test_a_helper_that_ended_is_no_longer_kept() -> None:
    """An ended helper's pid may be reused by a process a case starts: it must not be
    kept from then on."""
    from cer.worker.main import Worker, _watch

    ctrl_in, ctrl_out = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper
        time.sleep(30)
        os._exit(0)
    try:
        worker = Worker(ctrl_in, ctrl_out)
        worker._helpers = _watch([pid])
        assert worker._kept() == frozenset({pid})
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while worker._kept() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert worker._kept() == frozenset()
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(ctrl_in)
        os.close(ctrl_out)

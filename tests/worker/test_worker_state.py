"""The worker's state check without isolation: its cheap path (dict version tags) must
see every change the name-by-name comparison sees."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from cer.worker import snapshot as worker
from cer.worker.snapshot import Snapshot as _Snapshot
from cer.worker.versions import dict_version_reader as _dict_version_reader

SIGNALS = worker._SIGNALS

needs_tags = pytest.mark.skipif(
    _dict_version_reader() is None, reason="no trustworthy dict version tags here"
)


@needs_tags
def test_a_version_tag_moves_on_every_change_and_only_then() -> None:
    reader = _dict_version_reader()
    assert reader is not None
    kept = object()
    namespace: dict[str, Any] = {"a": kept}
    tag = reader(namespace)
    before = tag.value
    namespace["a"] = kept  # the same object: nothing changed
    assert tag.value == before
    for change in (
        lambda: namespace.__setitem__("a", object()),
        lambda: namespace.__setitem__("b", 1),
        lambda: namespace.__delitem__("b"),
        lambda: namespace.update(c=2),
        lambda: namespace.pop("c"),
        namespace.clear,
    ):
        seen = tag.value
        change()
        assert tag.value != seen


@pytest.mark.parametrize(
    ("change", "undo", "what"),
    [
        (
            lambda: setattr(os, "cer_probe", 1),
            lambda: delattr(os, "cer_probe"),
            "changed the runner's modules",
        ),
        (
            lambda: os.environ.__setitem__("CER_PROBE", "1"),
            lambda: os.environ.__delitem__("CER_PROBE"),
            "changed environment variables",
        ),
        (
            lambda: setattr(sys.modules["builtins"], "cer_probe", 1),
            lambda: delattr(sys.modules["builtins"], "cer_probe"),
            "changed builtins",
        ),
        (
            lambda: setattr(worker, "_SIGNALS", tuple(list(SIGNALS))),  # equal, not the same
            lambda: setattr(worker, "_SIGNALS", SIGNALS),
            "changed the runner's modules",
        ),
    ],
    ids=["module name", "environment", "builtins", "rebound to another object"],
)
def test_a_kept_snapshot_sees_a_change_and_its_undoing(change: Any, undo: Any, what: str) -> None:
    snapshot = _Snapshot.take()
    assert snapshot.differences() is None
    change()
    try:
        found = snapshot.differences()
    finally:
        undo()
    assert found is not None and what in found
    # undone: the same objects again, and the snapshot still holds
    assert snapshot.differences() is None
    assert snapshot.differences() is None


def test_a_lazy_import_is_no_change_but_a_replaced_or_removed_guarded_module_is() -> None:
    import types

    snapshot = _Snapshot.take()
    sys.modules["cer_probe_lazy"] = types.ModuleType("cer_probe_lazy")  # imported by a case
    try:
        assert snapshot.differences() is None
        assert snapshot.differences() is None
        real = sys.modules["json"]
        sys.modules["json"] = types.ModuleType("json")
        try:
            found = snapshot.differences()
        finally:
            sys.modules["json"] = real
        assert found is not None and "changed the runner's modules" in found
        del sys.modules["json"]
        try:
            found = snapshot.differences()
        finally:
            sys.modules["json"] = real
        assert found is not None and "changed the runner's modules" in found
        assert snapshot.differences() is None
    finally:
        del sys.modules["cer_probe_lazy"]

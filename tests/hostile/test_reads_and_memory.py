"""Memory held where no resident count sees it, and reads the sandbox must refuse.

A case's memory is what the kernel charges for it: a table kept in a ``memfd`` that
is written and never mapped, or in files under ``/dev/shm``, is RAM all the same, and
must not pass a bound it exceeds, whichever way the run measured (a cgroup of the
case's own, or the memory-backed files the case holds).
"""

from __future__ import annotations

import os
import textwrap
from typing import Any

import pytest

from cer import memory_cgroup, sandbox
from cer.model import RunResult, Status
from support import Module

PASS, FAIL, ERRORED = Status.PASS, Status.FAIL, Status.ERRORED

needs_sandbox = pytest.mark.skipif(
    not sandbox.status().available, reason="memory is measured only under the sandbox"
)
has_cgroup = isinstance(memory_cgroup.locate(), memory_cgroup.Controller)

HIDDEN = """
import os, mmap

def f(where):
    block = b"x" * (1 << 20)
    kept = []
    if where == "memfd":
        fd = os.memfd_create("table")
        for _ in range(160):
            os.write(fd, block)
        kept.append(fd)
    elif where == "shm":
        for index in range(4):
            path = f"/dev/shm/cer-hostile-{os.getpid()}-{index}"
            with open(path, "wb") as handle:
                for _ in range(40):
                    handle.write(block)
    elif where == "memfd-freed":
        fd = os.memfd_create("table")
        for _ in range(160):
            os.write(fd, block)
        os.close(fd)
    globals()["kept"] = kept
    return {"output": 4}
"""


def _suite(*wheres: str) -> str:
    parts = ['commonsformat_evals = "0.2"\ntarget = "t"\n']
    for where in wheres:
        parts.append(
            f'[[cases]]\nname = "{where}"\ncategory = "functional"\n'
            f'input = {{ where = "{where}" }}\n'
            "expect = { output = 4, resident_memory_mb_max = 100 }\n"
        )
    return "\n".join(parts)


def _run(module: Module, *wheres: str, **options: Any) -> RunResult:
    module.suite(_suite(*wheres))
    name = module.impl(textwrap.dedent(HIDDEN))
    return module.run(f"{name}:f", timeout=10.0, **options)


@pytest.fixture(autouse=True)
def _clean_shm() -> Any:
    yield
    for name in os.listdir("/dev/shm"):
        if name.startswith("cer-hostile-"):
            os.unlink(os.path.join("/dev/shm", name))


def _mb(result: RunResult, index: int) -> float:
    return float(result.results[index].observation["resident_memory_mb"])


@needs_sandbox
@pytest.mark.skipif(not has_cgroup, reason=f"no memory cgroup here: {memory_cgroup.locate()}")
def test_a_cgroup_of_its_own_counts_memfd_and_shm_memory(module: Module) -> None:
    result = _run(module, "none", "memfd", "shm", "memfd-freed")
    statuses = [r.status for r in result.results]
    assert statuses == [PASS, FAIL, FAIL, FAIL], [r.reason for r in result.results]
    for index in (1, 2, 3):
        assert _mb(result, index) > 150
        assert "expected resident_memory_mb <= 100" in (result.results[index].reason or "")
    assert result.conditions is not None
    assert result.conditions.memory.startswith("cgroup v")
    assert not [n for n in os.listdir(memory_cgroup.locate().parent) if n.startswith("cer-case-")]  # type: ignore[union-attr]


@needs_sandbox
def test_without_a_cgroup_the_memory_backed_files_a_case_holds_are_counted(
    module: Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(memory_cgroup.DISABLE_ENV, "1")
    result = _run(module, "none", "memfd", "shm")
    statuses = [r.status for r in result.results]
    assert statuses == [PASS, FAIL, FAIL], [r.reason for r in result.results]
    assert _mb(result, 1) > 150 and _mb(result, 2) > 150
    assert result.conditions is not None
    assert result.conditions.memory.startswith(
        "peak resident memory plus the memory-backed files the case holds (no cgroup: "
    )


def test_a_run_without_memory_cases_names_no_method(module: Module) -> None:
    module.suite(
        'commonsformat_evals = "0.2"\ntarget = "t"\n[[cases]]\nname = "a"\n'
        'category = "functional"\ninput = { where = "none" }\nexpect = { output = 4 }\n'
    )
    name = module.impl(textwrap.dedent(HIDDEN))
    result = module.run(f"{name}:f", timeout=10.0)
    assert result.conditions is not None and result.conditions.memory == ""

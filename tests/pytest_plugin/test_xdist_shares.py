"""Under pytest-xdist each worker makes one cer run over its share of a suite, rather
than a run per few items it is handed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cer.pytest_plugin import share_of
from pytest_plugin.test_plugin import pytest_run


def test_a_case_falls_in_one_share_of_its_suite_and_other_tests_stay_alone() -> None:
    shares = {share_of(f"spec/evals.toml::case-{n}", 2) for n in range(40)}
    assert shares == {"spec/evals.toml::cer-share-0", "spec/evals.toml::cer-share-1"}
    assert share_of("spec/evals.toml::case-7", 2) == share_of("spec/evals.toml::case-7", 2)
    assert share_of("tests/test_x.py::test_y", 2) == "tests/test_x.py::test_y"
    assert share_of("tests/test_x.py::Class::test_y", 2) == "tests/test_x.py::Class::test_y"


@pytest.mark.slow
def test_each_xdist_worker_makes_one_cer_run(tmp_path: Path) -> None:
    log = tmp_path / "parents.log"
    cases = "".join(
        f'\n[[cases]]\nname = "case-{n}"\ncategory = "functional"\n'
        f"input = {{ x = {n} }}\nexpect = {{ output = {2 * n} }}\n"
        for n in range(24)
    )
    (tmp_path / "evals.toml").write_text(
        f'commonsformat_evals = "0.2"\ntarget = "t"\n{cases}', encoding="utf-8"
    )
    (tmp_path / "impl.py").write_text(
        textwrap.dedent(
            f"""
            import os

            def f(x):
                # Each case runs in a child of its cer run's worker process, one
                # worker process per cer run: its parent names the run.
                with open({str(log)!r}, "a") as out:
                    out.write(f"{{os.getppid()}}\\n")
                return x * 2
            """
        ),
        encoding="utf-8",
    )
    done = pytest_run(
        "--cer-impl", "impl:f", "--cer-sandbox", "off", "evals.toml", "-n", "2", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "24 passed" in done.stdout
    parents = log.read_text(encoding="utf-8").split()
    assert len(parents) == 24
    assert len(set(parents)) == 2  # one cer run (one worker process) per xdist worker

"""Benchmarks of the runner, run by hand: ``python bench/run.py [--quick]``.

Generates synthetic suites (string, nested-table and numeric expectations) in a
temporary folder and measures, in one process run so that ratios compare like with
like:

1. suite load time (parse + validate) per case count;
2. runner cost per case against a bare loop that calls the same implementation and
   compares with ``==`` in one process, for each isolation mode;
3. whole-process ``cer run`` against ``pytest`` running the same cases as a
   parametrized test;
4. peak resident memory of ``cer run``;
5. start-up: ``cer run`` on a one-case suite.

Prints a table and writes ``bench/results.json``. Never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
IMPLEMENTATION = '''
def render(text, depth, count):
    """A trivial implementation: a string, a nested table and a number per case."""
    return {
        "html": "<p>" + text + "</p>\\n",
        "tree": {"depth": depth, "items": [{"n": i} for i in range(count)]},
        "total": count * depth,
    }
'''


def case_text(index: int) -> str:
    depth = index % 5 + 1
    count = index % 3 + 1
    items = ", ".join(f"{{ n = {i} }}" for i in range(count))
    return (
        f'[[cases]]\nname = "case-{index:06d}"\ncategory = "functional"\n'
        f'tags = ["group:{index % 10}"]\n'
        f'input = {{ text = "line {index}\\twith tab", depth = {depth}, count = {count} }}\n'
        f'expect = {{ html = "<p>line {index}\\twith tab</p>\\n", '
        f"tree = {{ depth = {depth}, items = [{items}] }}, total = {count * depth} }}\n\n"
    )


def make_module(root: Path, cases: int) -> Path:
    folder = root / f"suite_{cases}"
    folder.mkdir(parents=True, exist_ok=True)
    parts = ['commonsformat_evals = "0.2"\ntarget = "bench"\n\n']
    parts.extend(case_text(i) for i in range(cases))
    (folder / "evals.toml").write_text("".join(parts), encoding="utf-8")
    (folder / "bench_impl.py").write_text(IMPLEMENTATION, encoding="utf-8")
    (folder / "test_bench.py").write_text(
        textwrap.dedent(
            """
            import pathlib
            import tomllib

            import pytest

            from bench_impl import render

            SUITE = tomllib.loads(
                (pathlib.Path(__file__).parent / "evals.toml").read_text()
            )["cases"]


            @pytest.mark.parametrize("case", SUITE, ids=[c["name"] for c in SUITE])
            def test_case(case):
                observed = render(**case["input"])
                for key, value in case["expect"].items():
                    assert observed[key] == value
            """
        ),
        encoding="utf-8",
    )
    return folder


def timed(func: Callable[[], Any], repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - started)
    return best


def bare_loop(folder: Path) -> float:
    sys.path.insert(0, str(folder))
    try:
        from cer.suite import load_suite

        suite = load_suite(folder / "evals.toml")
        import importlib

        impl = importlib.import_module("bench_impl")
        importlib.reload(impl)

        def loop() -> None:
            for case in suite.cases:
                observed = impl.render(**case.input)
                for key, value in case.expect.items():
                    if observed[key] != value:
                        raise AssertionError(case.name)

        return timed(loop)
    finally:
        sys.path.remove(str(folder))


def run_process(args: list[str], cwd: Path) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of a whole child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{args} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, max(peak, before)


def cer_run(folder: Path, *extra: str) -> tuple[float, int]:
    cer = shutil.which("cer") or str(Path(sys.executable).parent / "cer")
    return run_process(
        [cer, "run", "evals.toml", "--impl", "bench_impl:render", "-q", *extra], folder
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller suites, fewer repeats")
    args = parser.parse_args()
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "load_s": {},
        "per_case_ms": {},
        "whole_process_s": {},
        "peak_rss_mib": {},
    }
    from cer.suite import load_suite

    with tempfile.TemporaryDirectory(prefix="cer-bench-") as tmp:
        root = Path(tmp)
        folders = {n: make_module(root, n) for n in sizes}
        one = make_module(root, 1)
        for n, folder in folders.items():
            results["load_s"][n] = timed(lambda f=folder: load_suite(f / "evals.toml"))
        for n in (1_000, 10_000):
            folder = folders[n]
            loop = bare_loop(folder)
            row = {"bare_loop": loop / n * 1000}
            for mode in ("none", "fork"):
                elapsed = min(cer_run(folder, "--isolation", mode)[0] for _ in range(2))
                row[f"cer_{mode}"] = elapsed / n * 1000
            results["per_case_ms"][n] = row
        # Marginal cost per case: the slope between the 1,000- and 10,000-case runs.
        small, large = results["per_case_ms"][1_000], results["per_case_ms"][10_000]
        marginal = {}
        for key in ("bare_loop", "cer_none", "cer_fork"):
            total_small, total_large = small[key] * 1_000, large[key] * 10_000
            marginal[key] = (total_large - total_small) / 9_000
        results["marginal_ms_per_case"] = marginal
        folder = folders[1_000]
        cer_time, cer_peak = cer_run(folder)
        none_time, _ = cer_run(folder, "--isolation", "none")
        pytest_time, _ = run_process(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_bench.py"],
            folder,
        )
        results["whole_process_s"][1_000] = {
            "cer_fork": cer_time,
            "cer_none": none_time,
            "pytest": pytest_time,
        }
        results["peak_rss_mib"]["cer_run_1000"] = cer_peak / 1024
        startup = [cer_run(one)[0] for _ in range(5)]
        results["startup_s"] = statistics.median(startup)

    print_table(results)
    (HERE / "results.json").write_text(json.dumps(results, indent=2) + "\n")


def print_table(results: dict[str, Any]) -> None:
    print(f"machine: {results['machine']}")
    print("\nsuite load (parse + validate)")
    for n, seconds in results["load_s"].items():
        print(f"  {n:>7} cases  {seconds * 1000:9.1f} ms")
    print("\nwhole-run cost per case (ms), including start-up")
    for n, row in results["per_case_ms"].items():
        cells = "  ".join(f"{k}={v:.3f}" for k, v in row.items())
        print(f"  {n:>7} cases  {cells}")
    marginal = results["marginal_ms_per_case"]
    bare = marginal["bare_loop"]
    print("\nmarginal cost per case (ms, slope 1k→10k)")
    for key, value in marginal.items():
        extra = "" if key == "bare_loop" else f"  ({value / bare:.1f}x bare, +{value - bare:.3f})"
        print(f"  {key:<10} {value:.4f}{extra}")
    whole = results["whole_process_s"][1_000]
    print("\nwhole process, 1,000 cases")
    for key, value in whole.items():
        print(f"  {key:<10} {value:.2f} s  ({value / whole['pytest']:.2f}x pytest)")
    print(f"\npeak RSS of cer run (1,000 cases): {results['peak_rss_mib']['cer_run_1000']:.0f} MiB")
    print(f"start-up, one-case suite: {results['startup_s'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()

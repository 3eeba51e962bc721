"""Benchmarks of the runner, run by hand: ``python bench/run.py [--quick] [--skip-tui]``.

Generates synthetic suites (string, nested-table and numeric expectations) in a
temporary folder and measures, in one process run so that ratios compare like with
like (see docs/benchmarks.md for the targets and the latest table):

1. suite load time (parse + validate) for 1,000 / 10,000 / 100,000 cases;
2. runner cost per case against a bare loop that calls the same implementation and
   compares with ``==`` in one process, for each isolation mode, as whole-process
   times of 1,000 and 10,000 cases and as the marginal cost (the slope between them);
   beside it the fork floor: fork + pipe + wait of a process of the worker's size;
3. whole-process ``cer run`` against ``pytest`` running the same cases as a
   parametrized test: the synthetic 1,000 cases, and 652 CommonMark-style documents
   rendered by markdown-it-py through a shared-parser adapter;
4. start-up: ``cer run`` on a one-case suite, beside a bare interpreter's start;
5. the TUI, headless, driven by its pilot through ``cer.tui.app.create_app``:
   save-to-first-result and save-to-last-result (write the implementation file, wait
   for the list to update), with and without warm workers; a keypress while a large
   run streams in; its peak memory holding 100,000 cases;
6. peak memory of ``cer run`` on 100,000 cases;
7. ``-j 2`` against ``-j 1`` on a CPU-bound implementation.

Prints a table and writes ``bench/results.json`` (git-ignored). Never part of the test
suite. Every child process runs without ``PYTHONDONTWRITEBYTECODE``, as on a user's
machine, after a warm-up run that writes the bytecode caches. Times are the best of a
few repeats: on a shared machine the best is the least disturbed.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
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
CPU_BOUND = '''
def work(n):
    """About 50 ms of pure Python per case on a 2020s laptop core."""
    total = 0
    for i in range(n):
        total = (total * 31 + i) % 1_000_003
    return {"total": total}
'''
CM_ADAPTER = '''
from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark")


def render(markdown):
    """A shared parser, made once at import: what a user's adapter would do."""
    return _PARSER.render(markdown)
'''
PYTEST_FILE = """
import pathlib
import tomllib

import pytest

from {module} import {attr}

SUITE = tomllib.loads((pathlib.Path(__file__).parent / "evals.toml").read_text())["cases"]


@pytest.mark.parametrize("case", SUITE, ids=[c["name"] for c in SUITE])
def test_case(case):
    observed = {attr}(**case["input"])
    if not isinstance(observed, dict):
        observed = {{"{key}": observed}}
    for key, value in case["expect"].items():
        assert observed[key] == value
"""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def toml_string(text: str) -> str:
    return json.dumps(text)  # JSON's escapes are valid in a TOML basic string


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


def write_module(
    folder: Path, cases: list[str], impl_name: str, impl_source: str, entry: str, key: str
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    head = 'commonsformat_evals = "0.2"\ntarget = "bench"\n\n'
    (folder / "evals.toml").write_text(head + "".join(cases), encoding="utf-8")
    (folder / f"{impl_name}.py").write_text(impl_source, encoding="utf-8")
    (folder / "test_bench.py").write_text(
        PYTEST_FILE.format(module=impl_name, attr=entry, key=key), encoding="utf-8"
    )
    return folder


def make_module(root: Path, cases: int) -> Path:
    return write_module(
        root / f"suite_{cases}",
        [case_text(i) for i in range(cases)],
        "bench_impl",
        IMPLEMENTATION,
        "render",
        "output",
    )


MARKDOWN_PIECES = [
    ("# Heading {i}\n", "ATX headings"),
    ("## Sub *heading* {i}\n", "ATX headings"),
    ("Setext {i}\n======\n", "Setext headings"),
    ("Some *emphasis*, **strong** and `code {i}`.\n", "Emphasis and strong emphasis"),
    ('A [link](http://example.com/{i} "t").\n', "Links"),
    ("- item {i}\n- item two\n  - nested\n", "Lists"),
    ("1. first\n2. second {i}\n", "Lists"),
    ("> quote {i}\n> > nested quote\n", "Block quotes"),
    ("    indented code {i}\n", "Indented code blocks"),
    ("```python\nx = {i}\n```\n", "Fenced code blocks"),
    ("***\n", "Thematic breaks"),
    ("<div>\nhtml block {i}\n</div>\n", "HTML blocks"),
    ("line one  \nline two {i}\n", "Hard line breaks"),
    ("&copy; &amp; &#123; {i}\n", "Entity and numeric character references"),
    ("![image {i}](/path/to/img.png)\n", "Images"),
    ("Autolink <https://example.com/{i}>\n", "Autolinks"),
    ("\\*not emphasis\\* {i}\n", "Backslash escapes"),
    ("Hard\\\nbreak {i}\n", "Hard line breaks"),
    ("[ref {i}]\n\n[ref {i}]: /url\n", "Link reference definitions"),
    ("* loose\n\n* list {i}\n", "Lists"),
]
"""Markdown snippets, each with the section of the CommonMark spec it exercises."""


def commonmark_cases(count: int) -> list[str]:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    cases = []
    for i in range(count):
        pieces = [MARKDOWN_PIECES[(i * 7 + k * 3) % len(MARKDOWN_PIECES)] for k in range(1 + i % 4)]
        markdown = "\n".join(piece.format(i=i) for piece, _ in pieces)
        html = parser.render(markdown)
        sections = dict.fromkeys(f"upstream-section:{section}" for _, section in pieces)
        tags = ", ".join(toml_string(tag) for tag in sections)
        cases.append(
            f'[[cases]]\nname = "example-{i + 1:03d}"\ncategory = "functional"\n'
            f"tags = [{tags}]\n"
            f"input = {{ markdown = {toml_string(markdown)} }}\n"
            f"expect = {{ html = {toml_string(html)} }}\n\n"
        )
    return cases


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


def run_process(args: list[str], cwd: Path) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MiB) of a whole child process tree's largest member.

    The peak is read with ``/usr/bin/time`` when present (per process, not the maximum
    over every child this bench ever waited for)."""
    timer = shutil.which("time") or "/usr/bin/time"
    stats = cwd / ".bench-time"
    command = [timer, "-f", "%M", "-o", str(stats), *args] if Path(timer).exists() else args
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=False, env=child_env()
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{args} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    peak = 0.0
    if stats.exists():
        lines = stats.read_text().strip().splitlines()
        peak = int(lines[-1]) / 1024 if lines and lines[-1].isdigit() else 0.0
        stats.unlink()
    return elapsed, peak


def cer_command() -> str:
    return shutil.which("cer") or str(Path(sys.executable).parent / "cer")


_CLI_HAS_JOBS: bool | None = None
DRIVER = """
import sys
from cer.engine.runner import RunOptions, parse_jobs, run_suite
from cer.suite import load_suite

suite_path, impl, isolation, jobs = sys.argv[1:5]
run = run_suite(load_suite(suite_path),
                RunOptions(impl=impl, isolation=isolation, jobs=parse_jobs(jobs)))
print(run.summary)
sys.exit(0 if run.summary.verdict == "conformant" else 1)
"""


def cli_has_jobs() -> bool:
    """Whether ``cer run`` takes ``-j`` yet; without it the bench runs the same options
    through the runner's API (a slightly smaller process: no report code)."""
    global _CLI_HAS_JOBS
    if _CLI_HAS_JOBS is None:
        done = subprocess.run(
            [cer_command(), "run", "--help"],
            capture_output=True,
            text=True,
            check=False,
            env=child_env(),
        )
        _CLI_HAS_JOBS = "--jobs" in done.stdout
    return _CLI_HAS_JOBS


def cer_run(folder: Path, impl: str, *extra: str) -> tuple[float, float]:
    """``cer run`` with ``extra`` options (``-j N`` goes through the runner's API while
    the command line lacks it)."""
    words = list(extra)
    if "-j" in words and not cli_has_jobs():
        at = words.index("-j")
        jobs = words[at + 1]
        del words[at : at + 2]
        if jobs == "1":  # the command line's only setting so far
            return run_process(
                [cer_command(), "run", "evals.toml", "--impl", impl, "-q", *words], folder
            )
        isolation = words[words.index("--isolation") + 1] if "--isolation" in words else "fork"
        return run_process(
            [sys.executable, "-c", DRIVER, "evals.toml", impl, isolation, jobs], folder
        )
    return run_process([cer_command(), "run", "evals.toml", "--impl", impl, "-q", *words], folder)


def best_run(folder: Path, impl: str, *extra: str, repeat: int = 2) -> float:
    return min(cer_run(folder, impl, *extra)[0] for _ in range(repeat))


def pytest_run(folder: Path, repeat: int = 2) -> float:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_bench.py"]
    return min(run_process(args, folder)[0] for _ in range(repeat))


FORK_FLOOR = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
import cer.worker.main, bench_impl
best = float("inf")
for _ in range(5):
    started = time.perf_counter()
    for _ in range(200):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, b"x")
            os._exit(0)
        os.close(w)
        os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
    best = min(best, (time.perf_counter() - started) / 200)
print(best * 1000)
"""


def fork_floor(folder: Path) -> float:
    """ms for fork + pipe + wait of a process the size of a loaded worker."""
    done = subprocess.run(
        [sys.executable, "-c", FORK_FLOOR, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    return float(done.stdout.strip())


# --- the TUI, in a child process of its own ------------------------------------------

TUI_SIZE = (120, 36)


async def _tui_latency(folder: Path, impl: str, warm: bool, saves: int) -> dict[str, Any]:
    from cer.engine.runner import RunOptions, WarmWorkers, run_suite
    from cer.tui.app import create_app

    pool = WarmWorkers(1) if warm else None
    if pool is not None:
        pool.fill()
    run = functools.partial(run_suite, warm=pool) if pool is not None else run_suite
    source = folder / "bench_impl.py"
    app = create_app(folder / "evals.toml", RunOptions(impl=impl), run=run, watch=True)
    first: list[float] = []
    last: list[float] = []
    async with app.run_test(size=TUI_SIZE):
        await _until(lambda: app.runs_finished >= 1 and not app.board.running, 120)
        await _until(
            lambda: (
                app.plan is not None
                and source.resolve() in {Path(p).resolve() for p in app.plan.sources}
            ),
            30,
        )
        for attempt in range(saves):
            await asyncio.sleep(0.3)  # let the watcher and the warm worker settle
            generation, finished = app.generation, app.runs_finished
            started = time.perf_counter()
            source.write_text(IMPLEMENTATION + f"# save {attempt}\n", encoding="utf-8")
            seen_first = None
            while app.runs_finished <= finished:
                if seen_first is None and app.generation > generation and app.board.done >= 1:
                    seen_first = time.perf_counter() - started
                if time.perf_counter() - started > 120:
                    raise RuntimeError("the TUI did not rerun after a save")
                await asyncio.sleep(0.001)
            ended = time.perf_counter() - started
            first.append((seen_first if seen_first is not None else ended) * 1000)
            last.append(ended * 1000)
        await _quiet(app)
    if pool is not None:
        pool.close()
    return {
        "first_ms": statistics.median(first),
        "first_best_ms": min(first),
        "last_ms": statistics.median(last),
        "saves": saves,
    }


async def _tui_large(folder: Path, impl: str, jobs: int) -> dict[str, Any]:
    from cer.engine.runner import RunOptions
    from cer.tui.app import create_app

    options = RunOptions(impl=impl, isolation="none", jobs=jobs)
    app = create_app(folder / "evals.toml", options, watch=False)
    presses: list[float] = []
    async with app.run_test(size=TUI_SIZE) as pilot:
        await _until(lambda: app.board.done >= 100, 300)
        while app.board.running and len(presses) < 20:
            # Handled = the cursor moved; pilot.press itself waits for the whole app to
            # go idle, which a streaming run never does.
            before = app.case_list.cursor
            started = time.perf_counter()
            pressing = asyncio.ensure_future(pilot.press("j"))
            while app.case_list.cursor == before and time.perf_counter() - started < 10:
                await asyncio.sleep(0.001)
            presses.append((time.perf_counter() - started) * 1000)
            await pressing
            await asyncio.sleep(0.2)
        await _until(lambda: app.runs_finished >= 1 and not app.board.running, 900)
        rows = len(app.board.rows)
        await _quiet(app)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "rows": rows,
        "peak_rss_mib": peak,
        "keypress_median_ms": statistics.median(presses) if presses else None,
        "keypress_max_ms": max(presses) if presses else None,
        "keypresses": len(presses),
    }


async def _quiet(app: Any) -> None:
    """Let the panes catch up before the app closes (their workers post to the screen)."""
    await _until(lambda: not app.board.running and app.details_settled, 30)
    await asyncio.sleep(0.2)


async def _until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise RuntimeError("the TUI did not get there in time")
        await asyncio.sleep(0.01)


def tui_child(kind: str, folder: str, extra: str) -> None:
    """Entry point of the child process that drives the TUI (``--tui-child``)."""
    os.chdir(folder)
    sys.path.insert(0, folder)
    if kind == "latency":
        result = asyncio.run(_tui_latency(Path(folder), "bench_impl:render", extra == "warm", 7))
    else:
        result = asyncio.run(_tui_large(Path(folder), "bench_impl:render", int(extra)))
    print(json.dumps(result))


def run_tui_child(kind: str, folder: Path, extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--tui-child", kind, str(folder), extra],
        capture_output=True,
        text=True,
        check=False,
        env=child_env(),
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the TUI bench failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --- the whole bench ------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1,000 and 10,000 cases only, fewer repeats, a 10,000-case TUI",
    )
    parser.add_argument("--skip-tui", action="store_true", help="leave the TUI out")
    parser.add_argument("--tui-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tui_child:
        tui_child(*args.tui_child)
        return
    big = 10_000 if args.quick else 100_000
    sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000]
    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "quick": args.quick,
    }
    from cer.suite import load_suite

    with tempfile.TemporaryDirectory(prefix="cer-bench-") as tmp:
        root = Path(tmp)
        folders = {n: make_module(root, n) for n in sorted({*sizes, big})}
        one = make_module(root, 1)
        impl = "bench_impl:render"
        cer_run(one, impl)  # writes the bytecode caches a user's machine has
        step("suite load")
        load: dict[int, float] = {}
        for n in sizes:
            path = folders[n] / "evals.toml"
            load[n] = timed(functools.partial(load_suite, path), 1 if n >= 100_000 else 3)
        results["load_s"] = load

        step("per-case cost: bare loop, --isolation none, --isolation fork (-j 1)")
        per_case: dict[int, dict[str, float]] = {}
        for n in (1_000, 10_000):
            folder = folders[n]
            row = {"bare_loop": bare_loop(folder) / n * 1000}
            for mode in ("none", "fork"):
                seconds = best_run(folder, impl, "--isolation", mode, "-j", "1")
                row[f"cer_{mode}"] = seconds / n * 1000
            # The sandbox's cost: the same fork run without it (the rows above run
            # under it where the kernel has Landlock; see the summary line).
            seconds = best_run(folder, impl, "--isolation", "fork", "-j", "1", "--sandbox", "off")
            row["cer_fork_sandbox_off"] = seconds / n * 1000
            per_case[n] = row
        results["per_case_ms"] = per_case
        small, large = per_case[1_000], per_case[10_000]
        results["marginal_ms_per_case"] = {
            key: (large[key] * 10_000 - small[key] * 1_000) / 9_000 for key in small
        }
        results["fork_floor_ms"] = fork_floor(folders[1_000])

        step("whole process against pytest")
        folder = folders[1_000]
        whole = {
            "cer_fork_j1": best_run(folder, impl, "-j", "1"),
            "cer_fork_jauto": best_run(folder, impl, "-j", "auto"),
            "cer_none_j1": best_run(folder, impl, "--isolation", "none", "-j", "1"),
            "pytest": pytest_run(folder),
        }
        cm = write_module(
            root / "commonmark", commonmark_cases(652), "cm_adapter", CM_ADAPTER, "render", "html"
        )
        cer_run(cm, "cm_adapter:render")
        commonmark = {
            "cer_fork_jauto": best_run(cm, "cm_adapter:render", "-j", "auto"),
            "cer_fork_j1": best_run(cm, "cm_adapter:render", "-j", "1"),
            "cer_none_j1": best_run(cm, "cm_adapter:render", "--isolation", "none", "-j", "1"),
            "cer_none_jauto": best_run(
                cm, "cm_adapter:render", "--isolation", "none", "-j", "auto"
            ),
            "pytest": pytest_run(cm),
        }
        results["whole_process_s"] = {"synthetic_1000": whole, "commonmark_652": commonmark}

        step("start-up")
        results["startup_s"] = statistics.median(cer_run(one, impl)[0] for _ in range(7))
        results["python_startup_s"] = statistics.median(
            run_process([sys.executable, "-c", "pass"], one)[0] for _ in range(7)
        )
        results["worker_ready_s"] = worker_ready(one)

        step(f"peak memory of cer run on {big:,} cases")
        elapsed, peak = cer_run(folders[big], impl, "--isolation", "none", "-j", "auto")
        results["cer_run_large"] = {
            "cases": big,
            "seconds": elapsed,
            "peak_rss_mib": peak,
            "options": "--isolation none -j auto",
        }

        step("-j 2 against -j 1 on a CPU-bound implementation")
        results["jobs"] = jobs_speedup(root)

        if not args.skip_tui:
            step("TUI: save to first and last result")
            tui_folder = make_module(root / "tui", 200)
            results["tui"] = {
                "cases": 200,
                "cold": run_tui_child("latency", tui_folder, "cold"),
                "warm": run_tui_child("latency", tui_folder, "warm"),
            }
            step(f"TUI holding {big:,} cases (a keypress while they stream in)")
            results["tui"]["large"] = run_tui_child("large", folders[big], "0")
            results["tui"]["large"]["cases"] = big

    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["cli_has_jobs"] = cli_has_jobs()
    print_table(results)
    (HERE / "results.json").write_text(json.dumps(results, indent=2) + "\n")


def worker_ready(folder: Path) -> float:
    """Seconds from starting a worker to its answer for a trivial implementation."""
    code = textwrap.dedent(f"""
        import statistics, time
        from cer.engine.workerproc import WorkerProcess
        times = []
        for _ in range(5):
            started = time.perf_counter()
            worker = WorkerProcess()
            worker.send({{"op": "load", "impl": "bench_impl:render", "paths": [{str(folder)!r}],
                         "isolation": "fork", "capture_limit": 65536, "max_memory": None,
                         "timeout": 10}})
            worker.receive(60)
            times.append(time.perf_counter() - started)
            worker.close()
        print(statistics.median(times))
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=child_env()
    )
    return float(done.stdout.strip())


def jobs_speedup(root: Path) -> dict[str, Any]:
    cases = [
        f'[[cases]]\nname = "work-{i:03d}"\ncategory = "functional"\n'
        f"input = {{ n = 400000 }}\nexpect = {{ total_min = 0 }}\n\n"
        for i in range(40)
    ]
    folder = write_module(root / "cpu", cases, "cpu_impl", CPU_BOUND, "work", "total")
    cer_run(folder, "cpu_impl:work")
    one = best_run(folder, "cpu_impl:work", "-j", "1")
    two = best_run(folder, "cpu_impl:work", "-j", "2")
    return {"cases": 40, "j1_s": one, "j2_s": two, "speedup": one / two}


def step(what: str) -> None:
    print(f"· {what}", file=sys.stderr, flush=True)


def print_table(results: dict[str, Any]) -> None:
    machine = results["machine"]
    print(
        f"machine: Python {machine['python']}, {machine['platform']}, {machine['cpus']} CPUs, "
        f"load {machine['load_average_at_start']} → {machine['load_average_at_end']}"
    )
    print("\nsuite load (parse + validate)")
    for n, seconds in results["load_s"].items():
        print(f"  {int(n):>7,} cases  {seconds * 1000:9.1f} ms")
    print("\nwhole-run cost per case (ms), start-up included, -j 1")
    for n, row in results["per_case_ms"].items():
        cells = "  ".join(f"{k}={v:.3f}" for k, v in row.items())
        print(f"  {int(n):>7,} cases  {cells}")
    marginal = results["marginal_ms_per_case"]
    bare = marginal["bare_loop"]
    print("\nmarginal cost per case (ms, slope 1k→10k, -j 1)")
    for key, value in marginal.items():
        extra = (
            "" if key == "bare_loop" else f"  ({value / bare:.0f}x bare, +{value - bare:.3f} ms)"
        )
        print(f"  {key:<10} {value:.4f}{extra}")
    print(
        f"  fork floor (fork + pipe + wait of a worker-sized process): "
        f"{results['fork_floor_ms']:.3f} ms"
    )
    for label, whole in results["whole_process_s"].items():
        print(f"\nwhole process, {label}")
        for key, value in whole.items():
            print(f"  {key:<15} {value:6.2f} s  ({value / whole['pytest']:.2f}x pytest)")
    print(
        f"\nstart-up, one-case suite: {results['startup_s'] * 1000:.0f} ms "
        f"(bare interpreter {results['python_startup_s'] * 1000:.0f} ms, "
        f"worker ready {results['worker_ready_s'] * 1000:.0f} ms)"
    )
    large = results["cer_run_large"]
    print(
        f"cer run, {large['cases']:,} cases ({large['options']}): {large['seconds']:.1f} s, "
        f"peak RSS {large['peak_rss_mib']:.0f} MiB"
    )
    jobs = results["jobs"]
    print(
        f"-j 2 on a CPU-bound implementation ({jobs['cases']} cases): {jobs['j1_s']:.2f} s → "
        f"{jobs['j2_s']:.2f} s, speed-up {jobs['speedup']:.2f}x"
    )
    tui = results.get("tui")
    if tui:
        for mode in ("cold", "warm"):
            row = tui[mode]
            print(
                f"TUI save → first result ({mode} worker): median {row['first_ms']:.0f} ms "
                f"(best {row['first_best_ms']:.0f}), → last of {tui['cases']}: "
                f"{row['last_ms']:.0f} ms"
            )
        big = tui["large"]
        press = big["keypress_median_ms"]
        press_text = (
            f"keypress while streaming: median {press:.0f} ms, max "
            f"{big['keypress_max_ms']:.0f} ms ({big['keypresses']} presses)"
            if press is not None
            else "no keypress measured"
        )
        print(
            f"TUI holding {big['cases']:,} cases: peak RSS {big['peak_rss_mib']:.0f} MiB; "
            f"{press_text}"
        )


if __name__ == "__main__":
    main()

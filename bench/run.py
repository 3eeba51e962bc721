"""Benchmarks of the runner, run by hand: ``python bench/run.py [--only SECTION] [--quick]``.

Every figure is printed beside its floor or its peer measured in the same run, as a
ratio, because the machine this runs on is shared and its speed changes from minute to
minute (see docs/benchmarks.md for the targets and the latest table). Sections, each
runnable alone with ``--only``:

- ``fork``: ``--isolation fork`` at ``-j 1``, marginal cost per case (the whole run
  minus a one-case run) against the fork floor, the same implementation's cases run in
  a minimal fork + pipe + wait loop; on the trivial suite and the CommonMark-style one;
- ``none``: ``--isolation none``, marginal µs per case above a bare loop that calls the
  same implementation and compares with ``==``, and above the floor of one case in
  flight (the cases handed one at a time to a second process through a pipe);
- ``real``: a realistic worker: a TOML suite of several hundred documents against
  tomlkit (a pure-Python parser from the package index), whole processes in
  alternating rounds: ``cer run -j 1``, its defaults and ``--isolation none`` beside
  the fork floor and the plain loop of a process with the same imports, wall and CPU;
- ``peers``: the CommonMark-style workload (652 documents rendered by markdown-it-py
  through a shared-parser adapter) with cer's defaults (one worker per CPU), ``-j 1``
  and ``--isolation none``, against parametrized pytest and ``pytest -n auto``
  (pytest-xdist), wall and CPU time;
- ``plugin``: cer's pytest plugin without ``-n`` and with two xdist workers, beside
  ``cer run`` and beside what ``-n 2`` costs by itself (one empty test), on the
  trivial suite with 30 cases and with 600;
- ``startup``: a one-case ``cer run`` against the bare interpreter and its 100 ms
  target, beside ``cer --version``, ``cer check --help`` and ``cer run --help``, with
  the largest imports (``python -X importtime``);
- ``load``: a 100,000-case suite: tomli's own parse, a full load, the first load
  through the suite cache and a cached reload;
- ``watch``: the TUI's watch loop on the CommonMark-style suite: from saving a fix of a
  regression in rows near the end of the list to the first changed row, beside the
  last row, with the failed cases first (as cer-tui runs them) and in declared order;
- ``tui-memory``: the TUI's peak memory holding a 100,000-case run, and a keypress
  while it streams in;
- ``jobs``: ``-j 2`` against ``-j 1`` on a CPU-bound implementation;
- ``scale``: suites the size of test262 and WPT (100,000 cases; ``--quick``: 20,000),
  each ratio beside its target: ``--isolation none`` against the plain loop (parse the
  TOML, call, compare), fork mode ``-j 2`` against the fork floor with two in flight, a
  cached load against tomllib's parse, cer-tui to "all passed" against ``cer run``, a
  keypress while the rows stream in, a one-case start-up, the supervisor's memory per
  case (tracemalloc) and the sizes of the HTML and Markdown reports.

Prints a table and writes ``bench/results.json`` (git-ignored). Never part of the test
suite. Every child process runs without ``PYTHONDONTWRITEBYTECODE``, as on a user's
machine, after a warm-up run that writes the bytecode caches. Times are medians of a
few repeats, the compared runs alternating, and the load average is recorded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

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
        from cer.suite.loader import load_suite

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


class Measured(NamedTuple):
    """One child process tree, as ``/usr/bin/time`` saw it."""

    wall: float
    """Wall time, in seconds."""
    peak_mib: float
    """Peak resident memory of the tree's largest member, in MiB."""
    cpu: float
    """User plus system CPU time of the whole tree (every process it waited for), in
    seconds: what a busy machine disturbs least."""


def run_process(args: list[str], cwd: Path) -> Measured:
    """Run ``args`` in ``cwd`` and measure it.

    The peak and the CPU time are read with ``/usr/bin/time`` when present (per process
    tree, not the maximum over every child this bench ever waited for)."""
    timer = shutil.which("time") or "/usr/bin/time"
    stats = cwd / ".bench-time"
    command = [timer, "-f", "%M %U %S", "-o", str(stats), *args] if Path(timer).exists() else args
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=False, env=child_env()
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{args} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    peak = cpu = 0.0
    if stats.exists():
        lines = stats.read_text().strip().splitlines()
        words = lines[-1].split() if lines else []
        if len(words) == 3:
            peak = int(words[0]) / 1024
            cpu = float(words[1]) + float(words[2])
        stats.unlink()
    return Measured(elapsed, peak, cpu)


def cer_command() -> str:
    return shutil.which("cer") or str(Path(sys.executable).parent / "cer")


def cer_run(folder: Path, impl: str, *extra: str) -> Measured:
    """``cer run`` on the suite in ``folder`` with ``extra`` options, quietly."""
    return run_process([cer_command(), "run", "evals.toml", "--impl", impl, "-q", *extra], folder)


# --- the TUI, in a child process of its own ------------------------------------------

TUI_SIZE = (120, 36)


async def _tui_large(folder: Path, impl: str, jobs: int) -> dict[str, Any]:
    from cer.engine.options import RunOptions
    from cer.tui.app import create_app

    options = RunOptions(impl=impl, isolation="none", jobs=jobs)
    app = create_app(folder / "evals.toml", options, watch=False)
    presses: list[float] = []
    async with app.run_test(size=TUI_SIZE) as pilot:
        await _until(lambda: app.session.board.done >= 100, 300)
        while app.session.board.running and len(presses) < 20:
            # Handled = the cursor moved; pilot.press itself waits for the whole app to
            # go idle, which a streaming run never does.
            cases = app.screen_stack[0].case_list  # the run screen's, under any other
            before = cases.cursor
            started = time.perf_counter()
            pressing = asyncio.ensure_future(pilot.press("j"))
            while cases.cursor == before and time.perf_counter() - started < 10:
                await asyncio.sleep(0.001)
            presses.append((time.perf_counter() - started) * 1000)
            await pressing
            await asyncio.sleep(0.2)
        await _until(lambda: app.session.runs_finished >= 1 and not app.session.board.running, 900)
        rows = len(app.session.board.rows)
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
    await _until(lambda: not app.session.board.running and app.screen_stack[0].details_settled, 30)
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
    if kind == "watch":
        order, saves = extra.split(":")
        result = asyncio.run(_tui_watch(Path(folder), order == "first", int(saves)))
    elif kind == "watchedit":
        result = asyncio.run(_tui_watch_edit(Path(folder), int(extra)))
    elif kind == "allpassed":
        result = asyncio.run(_tui_to_all_passed(Path(folder)))
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


# --- the sections of the bench --------------------------------------------------------

FLOOR = """
import json, os, resource, sys, time, tomllib
folder, module, attr, key = sys.argv[1:5]
sys.path.insert(0, folder)
import importlib
import cer.worker.main  # the size of a loaded worker
function = getattr(importlib.import_module(module), attr)
with open(os.path.join(folder, "evals.toml"), "rb") as handle:
    cases = tomllib.load(handle)["cases"]
if len(sys.argv) > 6:  # one of several such processes: every k-th case from the i-th
    share, shares = map(int, sys.argv[6:8])
    cases = cases[share::shares]

def cpu():
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (resource.getrusage(resource.RUSAGE_SELF),
                      resource.getrusage(resource.RUSAGE_CHILDREN))
    )

times, cpus = [], []
for _ in range(int(sys.argv[5])):
    started, used = time.perf_counter(), cpu()
    for case in cases:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            observed = function(**case["input"])
            os.write(w, json.dumps(observed).encode())
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        observed = json.loads(data)
        if not isinstance(observed, dict):
            observed = {key: observed}
        assert all(observed[k] == v for k, v in case["expect"].items()), case["name"]
    times.append((time.perf_counter() - started) / len(cases))
    cpus.append((cpu() - used) / len(cases))
times.sort()
cpus.sort()
print(times[len(times) // 2] * 1000, cpus[len(cpus) // 2] * 1000)
"""
"""The fork floor: the same implementation's cases, each in a process forked from one
that imported ``cer.worker`` and the implementation, its observation sent back through
a pipe as JSON, then ``waitpid``: what any runner that forks per case must pay."""

IN_FLIGHT_FLOOR = """
import json, os, struct, sys, time, tomllib
folder, module, attr, key = sys.argv[1:5]
sys.path.insert(0, folder)
import importlib
import cer.worker.main  # the size of a loaded worker
function = getattr(importlib.import_module(module), attr)
with open(os.path.join(folder, "evals.toml"), "rb") as handle:
    cases = tomllib.load(handle)["cases"]
HEADER = struct.Struct("<I")

def read_exact(fd, size):
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data

def send(fd, payload):
    os.write(fd, HEADER.pack(len(payload)) + payload)

def receive(fd):
    (size,) = HEADER.unpack(read_exact(fd, HEADER.size))
    return read_exact(fd, size)

to_child_r, to_child_w = os.pipe()
to_parent_r, to_parent_w = os.pipe()
pid = os.fork()
if pid == 0:  # the process that runs the cases, one at a time, as it is handed each
    os.close(to_child_w)
    os.close(to_parent_r)
    while True:
        try:
            given = json.loads(receive(to_child_r))
        except EOFError:
            os._exit(0)
        send(to_parent_w, json.dumps(function(**given)).encode())
os.close(to_child_r)
os.close(to_parent_w)
times = []
for _ in range(int(sys.argv[5])):
    started = time.perf_counter()
    for case in cases:
        send(to_child_w, json.dumps(case["input"]).encode())
        observed = json.loads(receive(to_parent_r))
        if not isinstance(observed, dict):
            observed = {key: observed}
        assert all(observed[k] == v for k, v in case["expect"].items()), case["name"]
    times.append((time.perf_counter() - started) / len(cases))
os.close(to_child_w)
os.waitpid(pid, 0)
times.sort()
print(times[len(times) // 2] * 1e6)
"""
"""The floor of one case in flight: the same implementation's cases handed one at a
time to a second process (forked from one that imported ``cer.worker`` and the
implementation) through a pipe as JSON, its observation read back the same way before
the next case is handed over: what any runner that keeps the implementation out of its
own process and lets it hold one case at a time must pay."""


class Floor(NamedTuple):
    """A floor's median cost per case, in ms."""

    wall_ms: float
    cpu_ms: float


def fork_floor(folder: Path, module: str, attr: str, key: str, repeat: int = 3) -> Floor:
    """The fork floor on the suite in ``folder``: median ms per case, wall and CPU."""
    done = subprocess.run(
        [sys.executable, "-c", FLOOR, str(folder), module, attr, key, str(repeat)],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    wall, cpu = done.stdout.split()
    return Floor(float(wall), float(cpu))


def parallel_fork_floor(folder: Path, module: str, attr: str, key: str) -> Measured:
    """The fork floor as a whole run on every CPU: one process per CPU, started
    together, each importing the implementation and forking a process per case for its
    share of the cases; wall time from the first start to the last exit, with the
    interpreters' start-up, as cer's defaults are measured."""
    shares = os.cpu_count() or 1
    command = [sys.executable, "-c", FLOOR, str(folder), module, attr, key, "1"]
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = [
        subprocess.Popen(
            [*command, str(share), str(shares)],
            stdout=subprocess.DEVNULL,
            env=child_env(),
        )
        for share in range(shares)
    ]
    for child in children:
        if child.wait() != 0:
            raise RuntimeError(f"the parallel fork floor failed ({child.returncode})")
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(wall, 0.0, cpu)


def in_flight_floor(folder: Path, module: str, attr: str, key: str, repeat: int = 3) -> float:
    """The one-case-in-flight floor on the suite in ``folder``: median µs per case."""
    done = subprocess.run(
        [sys.executable, "-c", IN_FLIGHT_FLOOR, str(folder), module, attr, key, str(repeat)],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    return float(done.stdout.strip())


def median_run(folder: Path, impl: str, *extra: str, repeat: int = 3) -> float:
    """Median wall time (s) of ``cer run`` with ``extra`` options."""
    return statistics.median(cer_run(folder, impl, *extra).wall for _ in range(repeat))


def medians(runs: list[Measured]) -> dict[str, float]:
    """Median wall and CPU seconds of ``runs``."""
    return {
        "wall_s": statistics.median(run.wall for run in runs),
        "cpu_s": statistics.median(run.cpu for run in runs),
    }


class Marginal(NamedTuple):
    """What one more case costs a run, in ms: wall time and CPU time of the whole
    process tree."""

    wall_ms: float
    cpu_ms: float


def marginal(
    folder: Path, one: Path, cases: int, impl: str, *extra: str, repeat: int = 3
) -> Marginal:
    """ms per case of ``cer run`` above its own start-up: the whole run of ``cases``
    minus the same run of a one-case suite, over ``cases - 1``; the two alternate so
    that a change of load hits both alike."""
    big: list[Measured] = []
    small: list[Measured] = []
    for _ in range(repeat):
        big.append(cer_run(folder, impl, *extra))
        small.append(cer_run(one, impl, *extra))
    many, few = medians(big), medians(small)
    return Marginal(
        (many["wall_s"] - few["wall_s"]) / (cases - 1) * 1000,
        (many["cpu_s"] - few["cpu_s"]) / (cases - 1) * 1000,
    )


LANDLOCK_ONLY = "landlock-only"
"""The variant of :func:`marginals` run without the implementation's world (Landlock
and seccomp alone), as where namespaces are refused."""


@contextlib.contextmanager
def _landlock_only(wanted: bool) -> Iterator[None]:
    """Runs started meanwhile build no world (``CER_SANDBOX_NO_NAMESPACES``)."""
    if not wanted:
        yield
        return
    os.environ["CER_SANDBOX_NO_NAMESPACES"] = "1"
    try:
        yield
    finally:
        os.environ.pop("CER_SANDBOX_NO_NAMESPACES", None)


def marginals(
    folder: Path, one: Path, cases: int, impl: str, variants: dict[str, tuple[str, ...]]
) -> dict[str, Marginal]:
    """:func:`marginal` of each variant (its extra arguments), the variants' runs
    alternating in every round, so that a change of load hits each alike."""
    big: dict[str, list[Measured]] = {name: [] for name in variants}
    small: dict[str, list[Measured]] = {name: [] for name in variants}
    for _ in range(3):
        for name, extra in variants.items():
            with _landlock_only(name == LANDLOCK_ONLY):
                big[name].append(cer_run(folder, impl, *extra))
                small[name].append(cer_run(one, impl, *extra))
    found = {}
    for name in variants:
        many, few = medians(big[name]), medians(small[name])
        found[name] = Marginal(
            (many["wall_s"] - few["wall_s"]) / (cases - 1) * 1000,
            (many["cpu_s"] - few["cpu_s"]) / (cases - 1) * 1000,
        )
    return found


def first_cases(source: Path, target: Path, count: int) -> Path:
    """A copy of the module in ``source`` whose suite keeps only its first ``count``
    cases."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".cer", "__pycache__"))
    text = (source / "evals.toml").read_text(encoding="utf-8")
    head, *cases = text.split("[[cases]]\n")
    (target / "evals.toml").write_text(
        head + "".join("[[cases]]\n" + case for case in cases[:count]), encoding="utf-8"
    )
    return target


def section_fork(root: Path, quick: bool) -> dict[str, Any]:
    """Fork mode's marginal cost per case (-j 1) against the fork floor, on the
    trivial suite and on the CommonMark-style one."""
    n = 500 if quick else 1_000
    trivial = make_module(root, n)
    trivial_one = first_cases(trivial, root / "trivial_one", 1)
    cm = commonmark_module(root)
    cm_one = first_cases(cm, root / "cm_one", 1)
    cer_run(trivial_one, "bench_impl:render")
    cer_run(cm_one, "cm_adapter:render")
    result: dict[str, Any] = {}
    for label, folder, one, cases, impl, key in (
        ("trivial", trivial, trivial_one, n, "bench_impl:render", "output"),
        ("commonmark", cm, cm_one, 652, "cm_adapter:render", "html"),
    ):
        module, attr = impl.split(":")
        fork = ("--isolation", "fork", "-j", "1")
        floor = fork_floor(folder, module, attr, key)
        if label == "trivial":  # the sandbox's share, on and off alternating
            variants = {"on": fork, "off": (*fork, "--sandbox", "off"), LANDLOCK_ONLY: fork}
            both = marginals(folder, one, cases, impl, variants)
            cer = both["on"]
            result["trivial_sandbox_off_ms"] = both["off"].wall_ms
            result["trivial_sandbox_off_cpu_ms"] = both["off"].cpu_ms
            result["trivial_landlock_only_ms"] = both[LANDLOCK_ONLY].wall_ms
            result["trivial_landlock_only_cpu_ms"] = both[LANDLOCK_ONLY].cpu_ms
            # A worker's start, world included: the one-case run, with and without it.
            starts: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(5):
                for world in (True, False):
                    with _landlock_only(not world):
                        starts[world].append(cer_run(one, impl, *fork).wall)
            result["one_case_run_s"] = statistics.median(starts[True])
            result["one_case_run_landlock_only_s"] = statistics.median(starts[False])
        else:
            cer = marginal(folder, one, cases, impl, *fork)
        floor_after = fork_floor(folder, module, attr, key)
        floor_ms = statistics.median([floor.wall_ms, floor_after.wall_ms])
        floor_cpu_ms = statistics.median([floor.cpu_ms, floor_after.cpu_ms])
        result[label] = {
            "cases": cases,
            "floor_ms": floor_ms,
            "floor_before_after_ms": [floor.wall_ms, floor_after.wall_ms],
            "floor_cpu_ms": floor_cpu_ms,
            "cer_fork_ms": cer.wall_ms,
            "cer_fork_cpu_ms": cer.cpu_ms,
            "ratio": cer.wall_ms / floor_ms,
            "cpu_ratio": cer.cpu_ms / floor_cpu_ms,
        }
    return result


def section_none(root: Path, quick: bool) -> dict[str, Any]:
    """``--isolation none``: marginal µs per case above a bare loop calling the same
    implementation and comparing with ``==``, and above the floor of one case in flight
    (the same cases handed one at a time to a second process)."""
    n = 1_000 if quick else 2_000
    folder = make_module(root, n)
    one = first_cases(folder, root / "none_one", 1)
    cer_run(one, "bench_impl:render")
    bare = bare_loop(folder) / n * 1e6
    in_flight = in_flight_floor(folder, "bench_impl", "render", "output")
    cer = marginal(folder, one, n, "bench_impl:render", "--isolation", "none", "-j", "1")
    in_flight_after = in_flight_floor(folder, "bench_impl", "render", "output")
    floor_us = statistics.median([in_flight, in_flight_after])
    cer_us = cer.wall_ms * 1000
    return {
        "cases": n,
        "bare_us": bare,
        "in_flight_floor_us": floor_us,
        "in_flight_before_after_us": [in_flight, in_flight_after],
        "cer_none_us": cer_us,
        "cer_none_cpu_us": cer.cpu_ms * 1000,
        "above_bare_us": cer_us - bare,
        "above_in_flight_us": cer_us - floor_us,
    }


# --- a realistic worker: a TOML suite against a parser from the package index ----------

TOML_ADAPTER = '''
import tomlkit


def parse(document):
    """The document's value as plain data, parsed by tomlkit (a pure-Python parser from
    the package index, so the worker's heap is a real library's, as a user's would be)."""
    return {"output": tomlkit.parse(document).unwrap()}
'''

TOML_PIECES = [
    'title = "document {i}"\n',
    'name = "Tom \\u00e9 {i}"\nescaped = "tab\\there, quote \\" and \\\\"\n',
    "count = {i}\nhex = 0xDEAD\noct = 0o755\nbin = 0b1101\nbig = 9_223_372_036_854_775\n",
    "ratio = {i}.25\nexp = 6.626e-34\nneg = -0.5\n",
    "enabled = true\ndisabled = false\n",
    "when = 1979-05-27T07:32:{s:02d}-08:00\nday = 2020-01-{d:02d}\nat = 07:32:{s:02d}\n",
    "local = 1979-05-27T07:32:{s:02d}.5\n",
    'ports = [ 8000, 8001, {i} ]\nmixed = [ "a", 1, 2.5, true, [1, 2] ]\n',
    'point = {{ x = {i}, y = 2, label = "p" }}\n',
    'multi = """\nline one {i}\n  line two\n"""\nliteral = \'C:\\\\path\\\\{i}\'\n',
    '"quoted key {i}" = 1\ndotted.key.path = "v{i}"\n',
    '[server]\nhost = "10.0.0.{d}"\nport = {i}\n',
    '[server.tls]\ncert = "/etc/{i}.pem"\nverify = true\n',
    '[[products]]\nname = "Hammer"\nsku = {i}\n\n[[products]]\nname = "Nail"\ncolor = "gray"\n',
    '[owner]\nname = "Someone {i}"\ntags = [ "x", "y", "z" ]\n',
    "[empty{i}]\n",
]
"""TOML snippets combined into the realistic suite's documents, each under its own
table so that keys never clash."""

TOML_INVALID = [
    ("key = ", "Unexpected character"),
    ("a = 1\na = 2\n", "already exists"),
    ('s = "unterminated\n', "Control characters"),
    ("[table\nx = 1\n", "Unexpected"),
    ("n = 1__0\n", "Invalid"),
    ("d = 1979-13-45\n", "Invalid"),
    ("x = [1, 2\n", "Unexpected"),
    ("= 1\n", "Empty key"),
]
"""Invalid documents and a fragment of tomlkit's message for each."""


def toml_inline(value: Any) -> str:
    """``value`` (plain data as tomlkit returns it) as an inline TOML value."""
    import datetime

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(toml_inline(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_string(k)} = {toml_inline(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    raise TypeError(f"no inline TOML for {type(value).__name__}")


def toml_cases(count: int) -> list[str]:
    """``count`` cases: documents built from :data:`TOML_PIECES` whose expected value is
    tomlkit's own (checked against tomli's), and every twelfth an invalid document that
    must be rejected."""
    import tomli
    import tomlkit

    cases = []
    for i in range(count):
        name = f"toml-{i + 1:04d}"
        if i % 12 == 11:
            document, fragment = TOML_INVALID[i // 12 % len(TOML_INVALID)]
            try:
                tomlkit.parse(document)
            except Exception as exc:
                if fragment not in str(exc):
                    raise RuntimeError(f"tomlkit's message moved: {exc}") from None
            else:
                raise RuntimeError(f"tomlkit accepts {document!r}")
            cases.append(
                f'[[cases]]\nname = "{name}"\ncategory = "functional"\n'
                f'tags = ["invalid"]\ninput = {{ document = {toml_string(document)} }}\n'
                f"expect = {{ rejects = true, error_includes = {toml_string(fragment)} }}\n\n"
            )
            continue
        chosen = [TOML_PIECES[(i * 5 + k * 7) % len(TOML_PIECES)] for k in range(2 + i % 5)]
        flat = [p for p in chosen if not p.startswith("[")]
        tables = list(dict.fromkeys(p for p in chosen if p.startswith("[")))
        body = "".join(dict.fromkeys(flat)) + "\n".join(tables)
        document = body.format(i=i, s=i % 60, d=i % 28 + 1)
        value = tomlkit.parse(document).unwrap()
        if value != tomli.loads(document):
            raise RuntimeError(f"tomlkit and tomli disagree on {name}:\n{document}")
        cases.append(
            f'[[cases]]\nname = "{name}"\ncategory = "functional"\ntags = ["valid"]\n'
            f"input = {{ document = {toml_string(document)} }}\n"
            f"expect = {{ output = {toml_inline(value)} }}\n\n"
        )
    return cases


REAL_FLOOR = """
import os, pickle, resource, sys, time, tomllib
folder, module, attr, mode = sys.argv[1:5]
sys.path.insert(0, folder)
import importlib
import cer.worker.main  # the size of a loaded worker
function = getattr(importlib.import_module(module), attr)
with open(os.path.join(folder, "evals.toml"), "rb") as handle:
    cases = tomllib.load(handle)["cases"]


def observe(case):
    try:
        return function(**case["input"])
    except Exception as exc:
        return {"rejects": True, "error": str(exc)}


def check(case, observed):
    expect = case["expect"]
    if expect.get("rejects"):
        assert observed.get("rejects") and expect["error_includes"] in observed["error"], case
    else:
        assert observed.get("output") == expect["output"], case["name"]


started = time.perf_counter()
for case in cases:
    if mode == "loop":
        check(case, observe(case))
        continue
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, pickle.dumps(observe(case)))
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    check(case, pickle.loads(data))
print((time.perf_counter() - started) / len(cases) * 1000)
"""
"""The realistic suite's floors, as a whole process each (interpreter, imports, the
suite read with tomllib): ``loop`` calls the implementation on every case in the
process; ``fork`` forks a process per case from the process that imported it, the
observation sent back through a pipe (pickled), then ``waitpid``. Prints the ms per
case of the loop itself, start-up left out."""


def toml_module(root: Path, count: int) -> Path:
    folder = root / f"toml_{count}"
    if not (folder / "evals.toml").exists():
        write_module(folder, toml_cases(count), "toml_adapter", TOML_ADAPTER, "parse", "output")
    return folder


def section_real(root: Path, quick: bool) -> dict[str, Any]:
    """A realistic worker: a TOML suite (several hundred cases) against tomlkit, whole
    processes in alternating rounds, wall and CPU time: ``cer run -j 1``, its defaults
    and ``--isolation none`` beside the fork floor (a process with the same imports
    forking a process per case) and the plain loop (the same process calling the
    implementation in a loop)."""
    n = 300 if quick else 720
    folder = toml_module(root, n)
    one = first_cases(folder, root / "toml_one", 1)
    impl = "toml_adapter:parse"
    cer = [cer_command(), "run", "evals.toml", "--impl", impl, "-q"]
    floor = [sys.executable, "-c", REAL_FLOOR, str(folder), "toml_adapter", "parse"]
    commands = {
        "plain_loop": [*floor, "loop"],
        "fork_floor": [*floor, "fork"],
        "cer_fork_j1": [*cer, "-j", "1"],
        "cer_defaults": cer,
        "cer_none_j1": [*cer, "--isolation", "none", "-j", "1"],
    }
    for command in commands.values():  # warm-up: bytecode caches, the suite cache
        run_process(command, folder)
    run_process([*cer, "-j", "1"], one)
    runs: dict[str, list[Measured]] = {name: [] for name in commands}
    runs["cer_one_case"] = []
    for _ in range(2 if quick else 3):
        for name, command in commands.items():
            runs[name].append(run_process(command, folder))
        runs["cer_one_case"].append(run_process([*cer, "-j", "1"], one))
    rows = {name: medians(measured) for name, measured in runs.items()}
    return {
        "cases": n,
        "seconds": {name: row["wall_s"] for name, row in rows.items()},
        "cpu_seconds": {name: row["cpu_s"] for name, row in rows.items()},
        "load_1min": os.getloadavg()[0],
    }


def commonmark_module(root: Path) -> Path:
    folder = root / "commonmark"
    if not (folder / "evals.toml").exists():
        write_module(folder, commonmark_cases(652), "cm_adapter", CM_ADAPTER, "render", "html")
    return folder


def pytest_command(*extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "test_bench.py"]


def section_peers(root: Path, quick: bool) -> dict[str, Any]:
    """The CommonMark-style workload, whole processes: cer's defaults (fork isolation,
    one worker per CPU), ``-j 1`` and ``--isolation none`` against parametrized pytest
    and ``pytest -n auto``; every command once per round, the rounds repeated."""
    cm = commonmark_module(root)
    impl = "cm_adapter:render"
    cer = [cer_command(), "run", "evals.toml", "--impl", impl, "-q"]
    plugin = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cer-impl", impl]
    commands = {
        "cer_defaults": cer,
        "cer_fork_j1": [*cer, "-j", "1"],
        "cer_none": [*cer, "--isolation", "none"],
        "cer_none_j1": [*cer, "--isolation", "none", "-j", "1"],
        "pytest": pytest_command(),
        "pytest_xdist_auto": pytest_command("-n", "auto"),
        # cer's pytest plugin on the same suite, without -n and with two xdist workers
        # (each makes one cer run over its share of the suite); the plugin section
        # sets them beside xdist's own start.
        "cer_plugin": [*plugin, "evals.toml"],
        "cer_plugin_n2": [*plugin, "evals.toml", "-n", "2"],
    }
    for command in commands.values():  # warm-up: bytecode caches, the suite cache
        run_process(command, cm)
    runs: dict[str, list[Measured]] = {name: [] for name in commands}
    runs["fork_floor_every_cpu"] = []
    for _ in range(2 if quick else 3):
        for name, command in commands.items():
            runs[name].append(run_process(command, cm))
        runs["fork_floor_every_cpu"].append(parallel_fork_floor(cm, "cm_adapter", "render", "html"))
    rows = {name: medians(measured) for name, measured in runs.items()}
    return {
        "cases": 652,
        "seconds": {name: row["wall_s"] for name, row in rows.items()},
        "cpu_seconds": {name: row["cpu_s"] for name, row in rows.items()},
    }


EMPTY_TEST = "def test_nothing():\n    pass\n"


def section_plugin(root: Path, quick: bool) -> dict[str, Any]:
    """cer's pytest plugin without ``-n`` and with ``-n 2``, beside ``cer run`` of the
    same suite and beside pytest itself running one empty test without and with
    ``-n 2`` (what starting xdist's workers costs, whatever they run); the trivial
    suite with 30 cases (a first module's size) and with 600; whole processes, the
    commands alternating within each round."""
    empty = root / "empty_pytest"
    empty.mkdir(exist_ok=True)
    (empty / "test_empty.py").write_text(EMPTY_TEST, encoding="utf-8")
    bare = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_empty.py"]
    suites = {
        "trivial_30": (make_module(root, 30), "bench_impl:render"),
        "trivial_600": (make_module(root, 600), "bench_impl:render"),
    }
    commands: dict[str, tuple[list[str], Path]] = {
        "pytest_empty": (bare, empty),
        "pytest_empty_n2": ([*bare, "-n", "2"], empty),
    }
    for label, (folder, impl) in suites.items():
        plugin = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        plugin += ["--cer-impl", impl, "evals.toml"]
        commands[f"{label}_cer_run"] = (
            [cer_command(), "run", "evals.toml", "--impl", impl, "-q"],
            folder,
        )
        commands[f"{label}_cer_plugin"] = (plugin, folder)
        commands[f"{label}_cer_plugin_n2"] = ([*plugin, "-n", "2"], folder)
    for command, folder in commands.values():  # warm-up: bytecode caches, the suite cache
        run_process(command, folder)
    runs: dict[str, list[Measured]] = {name: [] for name in commands}
    for _ in range(2 if quick else 3):
        for name, (command, folder) in commands.items():
            runs[name].append(run_process(command, folder))
    rows = {name: medians(measured) for name, measured in runs.items()}
    return {
        "cases": {"trivial_30": 30, "trivial_600": 600},
        "seconds": {name: row["wall_s"] for name, row in rows.items()},
        "cpu_seconds": {name: row["cpu_s"] for name, row in rows.items()},
        "load_1min": os.getloadavg()[0],
    }


STARTUP_COMMANDS: dict[str, list[str]] = {
    "cer --version": ["--version"],
    "cer check --help": ["check", "--help"],
    "cer run --help": ["run", "--help"],
}
"""Short commands timed beside the one-case run: each imports only its subcommand's
module (``cer --version`` none), so each should cost less than the run."""

STARTUP_TARGET_MS = 100
"""A one-case ``cer run``'s wall time on a quiet machine (docs/benchmarks.md)."""


def section_startup(root: Path, quick: bool) -> dict[str, Any]:
    """A one-case ``cer run`` against the bare interpreter, and what it imports."""
    one = make_module(root / "startup", 1)
    impl = "bench_impl:render"
    cer_run(one, impl)
    repeat = 5 if quick else 9
    cer: list[Measured] = []
    bare: list[Measured] = []
    others: dict[str, list[Measured]] = {name: [] for name in STARTUP_COMMANDS}
    for _ in range(repeat):  # alternate, so that a change of load hits all alike
        cer.append(cer_run(one, impl))
        bare.append(run_process([sys.executable, "-c", "pass"], one))
        for name, words in STARTUP_COMMANDS.items():
            others[name].append(run_process([cer_command(), *words], one))
    return {
        "cer_run_ms": statistics.median(run.wall for run in cer) * 1000,
        "python_ms": statistics.median(run.wall for run in bare) * 1000,
        "commands_ms": {
            name: statistics.median(run.wall for run in runs) * 1000
            for name, runs in others.items()
        },
        "load_1min": os.getloadavg()[0],
        "cer_run_cpu_ms": statistics.median(run.cpu for run in cer) * 1000,
        "worker_ready_ms": worker_ready(one) * 1000,
        "imports": import_times(one, impl),
    }


def import_times(folder: Path, impl: str, top: int = 10) -> list[tuple[str, float]]:
    """The modules with the largest cumulative import time in a one-case ``cer run``
    (``python -X importtime``), in ms."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            cer_command(),
            "run",
            "evals.toml",
            "--impl",
            impl,
            "-q",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        env=child_env(),
    )
    rows: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[len("import time:") :].split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        if depth <= 1:  # what the command imports, and what those import directly
            rows.append((name.strip(), int(cumulative) / 1000))
    return sorted(rows, key=lambda row: -row[1])[:top]


LOAD_CHILD = """
import gc, json, os, statistics, sys, time
from pathlib import Path
import tomli
from cer.suite.loader import load_suite
from cer.suite.cache import cache_file, load_suite_cached

path = Path(sys.argv[1])
repeat = int(sys.argv[2])
text = path.read_text(encoding="utf-8")
out = {}

def parse():
    gc.disable()
    try:
        return tomli.loads(path.read_bytes().decode("utf-8"))
    finally:
        gc.enable()

drop = lambda: cache_file(path).unlink(missing_ok=True)
kinds = {
    "tomli_s": (parse, lambda: None),
    "load_s": (lambda: load_suite(path), lambda: None),
    "first_s": (lambda: load_suite_cached(path), drop),
    "cached_s": (lambda: load_suite_cached(path), lambda: load_suite_cached(path)),
}
times = {key: [] for key in kinds}
cpu = {key: [] for key in kinds}
for _ in range(repeat):  # round after round, so that a change of load hits each alike
    for key, (work, before) in kinds.items():
        before()
        gc.collect()
        started, started_cpu = time.perf_counter(), time.process_time()
        result = work()
        times[key].append(time.perf_counter() - started)
        cpu[key].append(time.process_time() - started_cpu)
        del result
        gc.collect()
out = {key: statistics.median(values) for key, values in times.items()}
out["cpu"] = {key: statistics.median(values) for key, values in cpu.items()}
out["entry_mib"] = cache_file(path).stat().st_size / 2**20
print(json.dumps(out))
"""


def section_load(root: Path, quick: bool) -> dict[str, Any]:
    """Loading a large suite: tomli's own parse, a full load (parse and validate), the
    first load through the cache (a full load, then writing the entry) and a cached
    reload, in one child process."""
    n = 10_000 if quick else 100_000
    folder = make_module(root, n)
    done = subprocess.run(
        [sys.executable, "-c", LOAD_CHILD, str(folder / "evals.toml"), "3"],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    result: dict[str, Any] = json.loads(done.stdout)
    result["cases"] = n
    result["megabytes"] = (folder / "evals.toml").stat().st_size / 1e6
    return result


def section_tui_memory(root: Path, quick: bool) -> dict[str, Any]:
    """The TUI holding a large run (``--isolation none``), and a keypress while it
    streams in."""
    n = 10_000 if quick else 100_000
    folder = make_module(root, n)
    result = run_tui_child("large", folder, "0")
    result["cases"] = n
    return result


CM_BROKEN = (
    CM_ADAPTER
    + """

import re

_REGRESSION = re.compile(r"\\b6[0-4][0-9]\\b")


def render(markdown):  # noqa: F811 - the regression under repair
    html = _PARSER.render(markdown)
    return html.upper() if _REGRESSION.search(markdown) else html
"""
)
"""The CommonMark adapter with a regression in the documents that mention a number
from 600 to 649: rows near the end of the list."""


async def _tui_watch(folder: Path, failed_first: bool, saves: int) -> dict[str, Any]:
    from dataclasses import replace

    from cer.engine.options import RunOptions
    from cer.engine.python.workerproc import WarmWorkers
    from cer.engine.runner import run_suite
    from cer.tui.app import create_app

    pool = WarmWorkers(1)
    pool.fill()

    def run(suite: Any, options: RunOptions, **kwargs: Any) -> Any:
        if not failed_first:
            options = replace(options, first=frozenset())
        return run_suite(suite, options, warm=pool, **kwargs)

    source = folder / "cm_adapter.py"
    source.write_text(CM_BROKEN, encoding="utf-8")
    app = create_app(folder / "evals.toml", RunOptions(impl="cm_adapter:render"), run=run)
    first: list[float] = []
    last: list[float] = []
    async with app.run_test(size=TUI_SIZE):
        await _until(lambda: app.session.runs_finished >= 1 and not app.session.board.running, 300)
        await _until(
            lambda: (
                app.control.plan is not None
                and source.resolve() in {Path(p).resolve() for p in app.control.plan.sources}
            ),
            30,
        )
        for attempt in range(saves):
            await asyncio.sleep(0.3)
            if attempt:  # break it again, and wait for that run
                broke_at = app.session.runs_finished
                source.write_text(CM_BROKEN + f"# {attempt}\n", encoding="utf-8")
                await _until(
                    lambda done=broke_at: (
                        app.session.runs_finished > done and not app.session.board.running
                    ),
                    300,
                )
                await asyncio.sleep(0.3)
            failing = [
                row
                for row in app.session.board.rows
                if row.status is not None and row.status.value in ("fail", "errored")
            ]
            if not failing:
                raise RuntimeError("the regression did not show")
            finished = app.session.runs_finished
            started = time.perf_counter()
            source.write_text(CM_ADAPTER + f"# fixed {attempt}\n", encoding="utf-8")
            seen = None
            while app.session.runs_finished <= finished:
                if seen is None and any(
                    not row.stale and row.status is not None and row.status.value == "pass"
                    for row in failing
                ):
                    seen = time.perf_counter() - started
                if time.perf_counter() - started > 300:
                    raise RuntimeError("the TUI did not rerun after a save")
                await asyncio.sleep(0.001)
            ended = time.perf_counter() - started
            first.append((seen if seen is not None else ended) * 1000)
            last.append(ended * 1000)
        await _quiet(app)
    pool.close()
    source.write_text(CM_ADAPTER, encoding="utf-8")
    return {
        "first_changed_ms": statistics.median(first),
        "last_row_ms": statistics.median(last),
        "saves": saves,
        "changed_rows": len(failing),
    }


WATCH_EDIT_CASES = 20_000
"""The size of the suite whose one case an edit changes (``watch`` section)."""
WATCH_EDIT_TARGET_MS = 300


async def _tui_watch_edit(folder: Path, saves: int) -> dict[str, Any]:
    """cer-tui watching a large suite (its own watcher, its own loader and suite cache),
    each save changing one case's expected total so that it fails: the time from the
    save to that row showing the failure, and to the cycle's end."""
    from cer.engine.options import RunOptions
    from cer.engine.python.workerproc import WarmWorkers
    from cer.engine.runner import run_suite
    from cer.tui.app import create_app

    pool = WarmWorkers(1)
    pool.fill()

    def run(suite: Any, options: RunOptions, **kwargs: Any) -> Any:
        return run_suite(suite, options, warm=pool, **kwargs)

    path = folder / "evals.toml"
    original = path.read_text(encoding="utf-8")
    options = RunOptions(impl="bench_impl:render", isolation="none")
    app = create_app(path, options, run=run)
    shown: list[float] = []
    ended: list[float] = []
    ran: list[int] = []
    text = original
    async with app.run_test(size=TUI_SIZE):
        await _until(lambda: app.session.runs_finished >= 1 and not app.session.board.running, 900)
        await _until(lambda: app.control.plan is not None, 30)
        for attempt in range(saves):
            await asyncio.sleep(1.0)  # let the watcher and the idle work settle
            index = (attempt + 1) * WATCH_EDIT_CASES // (saves + 1)
            name = f"case-{index:06d}"
            depth, count = index % 5 + 1, index % 3 + 1
            before = f"total = {count * depth} }}\n\n"
            at = text.index(f'name = "{name}"')
            end = text.index(before, at) + len(before)
            text = text[: end - len(before)] + f"total = {count * depth + 1} }}\n\n" + text[end:]
            finished = app.session.runs_finished
            started = time.perf_counter()
            path.write_text(text, encoding="utf-8")
            seen = None
            while seen is None or app.session.runs_finished <= finished:
                row = app.session.board.row(name)
                if (
                    seen is None
                    and row is not None
                    and not row.stale
                    and row.status is not None
                    and row.status.value == "fail"
                ):
                    seen = time.perf_counter() - started
                if time.perf_counter() - started > 120:
                    raise RuntimeError("the TUI did not show the edited case")
                await asyncio.sleep(0.001)
            shown.append(seen * 1000)
            ended.append((time.perf_counter() - started) * 1000)
            partial = app.session.summary().partial
            ran.append(partial.ran if partial is not None else len(app.session.board.rows))
        await _quiet(app)
    pool.close()
    path.write_text(original, encoding="utf-8")
    return {
        "cases": WATCH_EDIT_CASES,
        "edited_row_ms": statistics.median(shown),
        "edited_row_each_ms": [round(each) for each in shown],
        "cycle_end_ms": statistics.median(ended),
        "ran": ran,
        "saves": saves,
        "load_1min": os.getloadavg()[0],
    }


def section_watch(root: Path, quick: bool) -> dict[str, Any]:
    """The watch loop on the CommonMark-style suite: from saving a fix of a regression
    in rows near the end of the list to the first of those rows turning green, beside
    the last row, with the failed cases run first (as cer-tui does) and in declared
    order (for comparison); then an edit of one case of a 20,000-case suite, from the
    save to the edited row showing its new status."""
    cm = commonmark_module(root)
    saves = "2" if quick else "3"
    return {
        "failed_first": run_tui_child("watch", cm, f"first:{saves}"),
        "declared_order": run_tui_child("watch", cm, f"declared:{saves}"),
        "cases": 652,
        "edit": run_tui_child("watchedit", make_module(root, WATCH_EDIT_CASES), "5"),
    }


def section_jobs(root: Path, quick: bool) -> dict[str, Any]:
    """``-j 2`` against ``-j 1`` on a CPU-bound implementation."""
    return jobs_speedup(root)


# --- scale: suites the size of the large conformance suites --------------------------

PLAIN_LOOP = """
import importlib, sys, time, tomllib
folder, module, attr = sys.argv[1:4]
sys.path.insert(0, folder)
started = time.perf_counter()
with open(folder + "/evals.toml", "rb") as handle:
    cases = tomllib.load(handle)["cases"]
function = getattr(importlib.import_module(module), attr)
for case in cases:
    observed = function(**case["input"])
    for key, value in case["expect"].items():
        if observed[key] != value:
            raise AssertionError(case["name"])
print(time.perf_counter() - started)
"""
"""The plain loop of the ``scale`` section: a process that parses the TOML, calls the
implementation on every case and compares with ``==``."""

MEMORY_CHILD = """
import json, sys, tracemalloc
from pathlib import Path
folder = Path(sys.argv[1])
sys.path.insert(0, str(folder))
from cer.engine.options import RunOptions
from cer.engine.runner import run_suite
from cer.suite.loader import load_suite
suite = load_suite(folder / "evals.toml")
options = RunOptions(impl="bench_impl:render", isolation="none", jobs=1)
tracemalloc.start()
base = tracemalloc.take_snapshot()
before = tracemalloc.get_traced_memory()[0]
run = run_suite(suite, options)
held = tracemalloc.get_traced_memory()[0] - before
peak = tracemalloc.get_traced_memory()[1] - before
print(json.dumps({"cases": len(suite.cases), "held": held, "peak": peak,
                  "passed": run.summary.passed}))
"""
"""The supervisor's memory beyond the parsed suite, with tracemalloc: what a finished
run of ``--isolation none`` holds (its results) and its peak while it ran."""

MIXED_IMPL = """
import bench_impl


def render(text, depth, count):
    number = int(text.split()[1].split("\\t")[0])
    if number % 333 == 0:
        raise ValueError(f"no value for {number}")
    observed = bench_impl.render(text, depth, count)
    if number % 100 == 0:
        observed = dict(observed, total=-1)
    return observed
"""
"""The trivial implementation failing one case in a hundred and erroring one in 333:
a report of a large run with a few hundred cases to show in full."""


async def _tui_to_all_passed(folder: Path) -> dict[str, Any]:
    """cer-tui from its start to "all passed" on the suite in ``folder``, recording
    the run in the history as the ``cer-tui`` command does (``--isolation none``)."""
    from cer.engine.options import RunOptions
    from cer.tui.app import create_app

    options = RunOptions(impl="bench_impl:render", isolation="none")
    started = time.perf_counter()
    app = create_app(
        folder / "evals.toml", options, watch=False, history=folder / ".cer" / "history.sqlite"
    )
    async with app.run_test(size=TUI_SIZE):
        await _until(lambda: app.session.runs_finished >= 1 and not app.session.board.running, 1800)
        elapsed = time.perf_counter() - started
        passed = app.session.board.counts.passed
    return {"seconds": elapsed, "passed": passed}


def cache_entry(folder: Path) -> None:
    """Write the suite cache's entry for the suite in ``folder``, as a first run would,
    so that the compared runs all load it cached."""
    code = "import sys; from cer.suite.cache import load_suite_cached as l; l(sys.argv[1])"
    subprocess.run(
        [sys.executable, "-c", code, str(folder / "evals.toml")], check=True, env=child_env()
    )


def section_scale(root: Path, quick: bool) -> dict[str, Any]:
    """Suites at the scale of test262 and WPT, each figure beside its floor or peer in
    the same run, as a ratio against its target (docs/benchmarks.md)."""
    big = 20_000 if quick else 100_000
    mid = 20_000
    fork_n = 2_000 if quick else 20_000
    impl = "bench_impl:render"
    out: dict[str, Any] = {"cases_none": big, "cases_tui": mid, "cases_fork": fork_n}

    step(f"scale: {big} cases, --isolation none against the plain loop")
    folder = make_module(root / "scale", big)
    cache_entry(folder)
    plain, cer_none = [], []
    for _ in range(1 if big > 20_000 else 2):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", PLAIN_LOOP, str(folder), "bench_impl", "render"],
            check=True,
            capture_output=True,
            env=child_env(),
        )
        plain.append(time.perf_counter() - started)
        cer_none.append(cer_run(folder, impl, "--isolation", "none").wall)
    out["plain_loop_s"] = statistics.median(plain)
    out["cer_none_s"] = statistics.median(cer_none)

    step(f"scale: loading the cached {big}-case suite against tomllib's parse")
    done = subprocess.run(
        [sys.executable, "-c", LOAD_CHILD, str(folder / "evals.toml"), "1"],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    load = json.loads(done.stdout)
    out["tomllib_s"], out["cached_s"] = load["tomli_s"], load["cached_s"]

    step(f"scale: {fork_n} cases, fork mode -j 2 against the fork floor, two in flight")
    forked = make_module(root / "scale-fork", fork_n)
    cache_entry(forked)
    out["fork_floor_s"] = parallel_fork_floor(forked, "bench_impl", "render", "output").wall
    out["cer_fork_s"] = cer_run(forked, impl, "-j", "2").wall

    step(f"scale: cer-tui to all passed on {mid} cases against cer run")
    tui_folder = folder if mid == big else make_module(root / "scale-tui", mid)
    if tui_folder is not folder:
        cache_entry(tui_folder)
    tui, run = [], []
    for _ in range(2):
        run.append(cer_run(tui_folder, impl, "--isolation", "none").wall)
        tui.append(run_tui_child("allpassed", tui_folder, "0")["seconds"])
    out["tui_s"], out["cer_run_tui_s"] = statistics.median(tui), statistics.median(run)

    step(f"scale: cer-tui, an edit of one case of {WATCH_EDIT_CASES} → its row")
    out["watch_edit"] = run_tui_child(
        "watchedit", make_module(root / "scale-watch", WATCH_EDIT_CASES), "5"
    )

    step(f"scale: a keypress while {big} rows stream in")
    keys = run_tui_child("large", folder, "0")
    out["keypress_median_ms"] = keys["keypress_median_ms"]
    out["keypress_max_ms"] = keys["keypress_max_ms"]
    out["tui_peak_rss_mib"] = keys["peak_rss_mib"]

    step("scale: start-up, a one-case cer run")
    one = make_module(root / "scale-one", 1)
    cer_run(one, impl)
    starts, bare = [], []
    for _ in range(5):
        starts.append(cer_run(one, impl).wall)
        bare.append(run_process([sys.executable, "-c", "pass"], one).wall)
    out["startup_ms"] = statistics.median(starts) * 1000
    out["python_ms"] = statistics.median(bare) * 1000

    step(f"scale: the supervisor's memory on {big} cases (tracemalloc)")
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    memory = json.loads(done.stdout)
    out["cases_memory"] = memory["cases"]
    out["held_bytes_per_case"] = memory["held"] / memory["cases"]
    out["peak_bytes_per_case"] = memory["peak"] / memory["cases"]

    step(f"scale: the reports of {mid} cases, a few hundred failing")
    (tui_folder / "bench_mixed.py").write_text(MIXED_IMPL, encoding="utf-8")
    html_path, markdown_path = tui_folder / "report.html", tui_folder / "report.md"
    cer_run(
        tui_folder,
        "bench_mixed:render",
        "--isolation",
        "none",
        "--no-history",
        "--report",
        f"html={html_path}",
        "--report",
        f"markdown={markdown_path}",
    )
    out["html_mib"] = html_path.stat().st_size / 2**20
    out["markdown_mib"] = markdown_path.stat().st_size / 2**20
    return out


def print_scale(row: dict[str, Any]) -> None:
    """Each ratio of the ``scale`` section beside its target."""

    def line(what: str, value: float, target: float, unit: str = "x") -> None:
        verdict = "met" if value <= target else "NOT met"
        print(f"  {what:<58} {value:8.2f}{unit}  target {target:g}{unit}  {verdict}")

    print("\nscale: suites the size of test262 and WPT")
    print(
        f"  {row['cases_none']} cases --isolation none {row['cer_none_s']:.2f} s, plain loop "
        f"{row['plain_loop_s']:.2f} s; cached load {row['cached_s']:.3f} s, tomllib "
        f"{row['tomllib_s']:.3f} s"
    )
    line(
        f"{row['cases_none']} cases, --isolation none / plain loop",
        row["cer_none_s"] / row["plain_loop_s"],
        2,
    )
    print(
        f"  {row['cases_fork']} cases -j 2 {row['cer_fork_s']:.2f} s, "
        f"fork floor two in flight {row['fork_floor_s']:.2f} s"
    )
    line(
        f"{row['cases_fork']} cases, fork mode -j 2 / fork floor",
        row["cer_fork_s"] / row["fork_floor_s"],
        1.5,
    )
    line(
        f"cached load of {row['cases_none']} cases / tomllib's parse",
        row["cached_s"] / row["tomllib_s"],
        0.2,
    )
    print(f"  cer-tui {row['tui_s']:.2f} s to all passed, cer run {row['cer_run_tui_s']:.2f} s")
    line(
        f"{row['cases_tui']} cases, cer-tui to all passed / cer run",
        row["tui_s"] / row["cer_run_tui_s"],
        1.5,
    )
    if "watch_edit" in row:
        print_watch_edit(row["watch_edit"])
    line(
        f"keypress while {row['cases_none']} rows stream in (max)",
        row["keypress_max_ms"],
        100,
        " ms",
    )
    line(
        f"start-up, one-case cer run (python alone {row['python_ms']:.0f} ms)",
        row["startup_ms"],
        100,
        " ms",
    )
    line(
        f"{row.get('cases_memory', row['cases_tui'])} cases, supervisor memory held a case",
        row["held_bytes_per_case"] / 1024,
        1,
        " KiB",
    )
    print(f"  (its peak while running: {row['peak_bytes_per_case'] / 1024:.2f} KiB a case)")
    line(f"HTML report of {row['cases_tui']} cases", row["html_mib"], 4, " MiB")
    line(f"Markdown report of {row['cases_tui']} cases", row["markdown_mib"], 1, " MiB")


def print_watch_edit(row: dict[str, Any]) -> None:
    """The edit of one case of a large suite beside its target, as :func:`print_scale`
    prints its rows."""
    value, target = row["edited_row_ms"], WATCH_EDIT_TARGET_MS
    verdict = "met" if value <= target else "NOT met"
    what = f"{row['cases']} cases, save of one case → its row (median)"
    print(f"  {what:<58} {value:8.0f} ms  target {target} ms  {verdict}")
    print(
        f"  (each save {row['edited_row_each_ms']} ms; cycle ended after "
        f"{row['cycle_end_ms']:.0f} ms; cases run {row['ran']}; load {row['load_1min']:.2f})"
    )


SECTIONS: dict[str, Callable[[Path, bool], dict[str, Any]]] = {
    "fork": section_fork,
    "none": section_none,
    "real": section_real,
    "peers": section_peers,
    "plugin": section_plugin,
    "startup": section_startup,
    "load": section_load,
    "watch": section_watch,
    "tui-memory": section_tui_memory,
    "jobs": section_jobs,
    "scale": section_scale,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(SECTIONS),
        help="run only this section (repeatable); default: all",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller suites and fewer repeats (a rough look)"
    )
    parser.add_argument("--tui-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tui_child:
        tui_child(*args.tui_child)
        return
    chosen = args.only or list(SECTIONS)
    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "quick": args.quick,
    }
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="cer-bench-") as tmp:
        root = Path(tmp)
        warm = make_module(root / "warm", 1)
        cer_run(warm, "bench_impl:render")  # writes the bytecode caches a user's machine has
        for name in chosen:
            step(name)
            started = time.perf_counter()
            results[name] = SECTIONS[name](root, args.quick)
            results[name]["section_s"] = time.perf_counter() - started
            loads.append(os.getloadavg()[0])
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["machine"]["load_1min_after_each_section"] = [round(x, 2) for x in loads]
    print_table(results)
    (HERE / "results.json").write_text(json.dumps(results, indent=2) + "\n")


def worker_ready(folder: Path) -> float:
    """Seconds from starting a worker to its answer for a trivial implementation."""
    code = textwrap.dedent(f"""
        import statistics, time
        from cer.engine.python.workerproc import WorkerProcess
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
        f'input = {{ n = 400000 }}\nexpect = {{ total_min = 0, self_reported = ["total"] }}\n\n'
        for i in range(40)
    ]
    folder = write_module(root / "cpu", cases, "cpu_impl", CPU_BOUND, "work", "total")
    cer_run(folder, "cpu_impl:work")
    one = median_run(folder, "cpu_impl:work", "-j", "1")
    two = median_run(folder, "cpu_impl:work", "-j", "2")
    return {"cases": 40, "j1_s": one, "j2_s": two, "speedup": one / two}


def step(what: str) -> None:
    print(f"· {what}", file=sys.stderr, flush=True)


def print_table(results: dict[str, Any]) -> None:
    """The figures of every section run, each beside its floor or peer, as ratios."""
    machine = results["machine"]
    print(
        f"machine: Python {machine['python']}, {machine['platform']}, {machine['cpus']} CPUs; "
        f"load average {machine['load_average_at_start']} at the start, "
        f"{machine['load_average_at_end']} at the end "
        f"(1-min after each section: {machine['load_1min_after_each_section']})"
    )
    if "fork" in results:
        print("\nfork mode, -j 1: marginal cost per case against the fork floor (wall; CPU)")
        for label in ("trivial", "commonmark"):
            row = results["fork"][label]
            print(
                f"  {label:<11} {row['cases']:>5} cases  cer {row['cer_fork_ms']:.3f} ms  "
                f"floor {row['floor_ms']:.3f} ms  → {row['ratio']:.2f}x floor (target 1.3x); "
                f"CPU cer {row['cer_fork_cpu_ms']:.3f} ms, floor {row['floor_cpu_ms']:.3f} ms "
                f"→ {row['cpu_ratio']:.2f}x"
            )
        off = results["fork"]["trivial_sandbox_off_ms"]
        floor = results["fork"]["trivial"]["floor_ms"]
        print(f"  trivial, --sandbox off: cer {off:.3f} ms → {off / floor:.2f}x floor")
        on = results["fork"]["trivial"]["cer_fork_ms"]
        print(
            f"  the sandbox's cost per case: {on - off:.3f} ms (on {on:.3f}, off {off:.3f}), "
            f"beside the fork floor's {floor:.3f} ms (target 0.45 ms or less)"
        )
        alone = results["fork"].get("trivial_landlock_only_ms")
        if alone is not None:
            print(
                f"  the world's cost per case: {on - alone:.3f} ms (namespaces + Landlock "
                f"{on:.3f}, Landlock only {alone:.3f})"
            )
            start, start_alone = (
                results["fork"]["one_case_run_s"],
                results["fork"]["one_case_run_landlock_only_s"],
            )
            print(
                f"  a one-case run (a worker's start): {start * 1000:.0f} ms with the world, "
                f"{start_alone * 1000:.0f} ms with Landlock only"
            )
        off_cpu = results["fork"].get("trivial_sandbox_off_cpu_ms")
        if off_cpu is not None:
            on_cpu = results["fork"]["trivial"]["cer_fork_cpu_ms"]
            floor_cpu = results["fork"]["trivial"]["floor_cpu_ms"]
            print(
                f"  in CPU time: {on_cpu - off_cpu:.3f} ms (on {on_cpu:.3f}, off "
                f"{off_cpu:.3f}), beside the fork floor's {floor_cpu:.3f} ms"
            )
    if "none" in results:
        row = results["none"]
        print(
            f"\n--isolation none, -j 1, {row['cases']} cases: {row['cer_none_us']:.0f} µs a case "
            f"(CPU {row['cer_none_cpu_us']:.0f} µs), bare loop {row['bare_us']:.1f} µs → "
            f"{row['above_bare_us']:.0f} µs above it (target 30 µs)\n"
            f"  one case in flight, floor (a second process, a pipe each way): "
            f"{row['in_flight_floor_us']:.0f} µs a case → cer "
            f"{row['above_in_flight_us']:.0f} µs above it, "
            f"{row['cer_none_us'] / row['in_flight_floor_us']:.2f}x"
        )
    if "real" in results:
        row = results["real"]
        wall, cpu = row["seconds"], row["cpu_seconds"]
        loop, floor = wall["plain_loop"], wall["fork_floor"]
        print(
            f"\nrealistic worker: TOML suite, {row['cases']} cases, against tomlkit; whole "
            f"processes (median wall; CPU of the process tree), 1-min load {row['load_1min']:.1f}"
        )
        for key, value in wall.items():
            print(
                f"  {key:<14} {value:6.2f} s  {value / floor:5.2f}x fork floor  "
                f"{value / loop:5.2f}x plain loop   CPU {cpu[key]:6.2f} s"
            )
        start = wall["cer_one_case"]
        above = (wall["cer_fork_j1"] - start) / (row["cases"] - 1) * 1000
        print(
            f"  targets: cer_fork_j1 ≤ 1.30x fork floor (now {wall['cer_fork_j1'] / floor:.2f}x, "
            f"{above:.2f} ms a case above a one-case run); cer_none_j1 ≤ 2.00x plain loop "
            f"(now {wall['cer_none_j1'] / loop:.2f}x); cer_defaults ≤ cer_fork_j1 "
            f"(now {wall['cer_defaults'] / wall['cer_fork_j1']:.2f}x)"
        )
    if "peers" in results:
        rows = results["peers"]["seconds"]
        cpus = results["peers"]["cpu_seconds"]
        pytest_s, xdist_s = rows["pytest"], rows["pytest_xdist_auto"]
        print(
            f"\nCommonMark-style, {results['peers']['cases']} cases, whole process "
            "(median wall; CPU of the process tree)"
        )
        for key, value in rows.items():
            print(
                f"  {key:<20} {value:6.2f} s  {value / pytest_s:5.2f}x pytest  "
                f"{value / xdist_s:5.2f}x pytest -n auto   CPU {cpus[key]:6.2f} s"
            )
        print(
            "  targets: cer_defaults ≤ 1.00x pytest; cer_none ≤ 0.33x pytest "
            f"(now {rows['cer_defaults'] / pytest_s:.2f}x and {rows['cer_none'] / pytest_s:.2f}x)"
        )
    if "plugin" in results:
        rows = results["plugin"]["seconds"]
        cpus = results["plugin"]["cpu_seconds"]
        print(
            "\ncer's pytest plugin, whole process (median wall; CPU of the process tree); "
            f"load {results['plugin']['load_1min']:.1f} at the end"
        )
        print(
            f"  pytest, one empty test: {rows['pytest_empty']:.2f} s, with -n 2 "
            f"{rows['pytest_empty_n2']:.2f} s (xdist's own start: "
            f"{rows['pytest_empty_n2'] - rows['pytest_empty']:+.2f} s); CPU "
            f"{cpus['pytest_empty']:.2f} / {cpus['pytest_empty_n2']:.2f} s"
        )
        for label, cases in results["plugin"]["cases"].items():
            run_s = rows[f"{label}_cer_run"]
            one, two = rows[f"{label}_cer_plugin"], rows[f"{label}_cer_plugin_n2"]
            print(
                f"  {label:<11} {cases:>4} cases  cer run {run_s:6.2f} s  plugin {one:6.2f} s "
                f"({one / run_s:.2f}x)  plugin -n 2 {two:6.2f} s ({two / one:.2f}x the plugin; "
                f"{two - one - rows['pytest_empty_n2'] + rows['pytest_empty']:+.2f} s beyond "
                f"xdist's start)   CPU {cpus[f'{label}_cer_plugin']:.2f} / "
                f"{cpus[f'{label}_cer_plugin_n2']:.2f} s"
            )
    if "startup" in results:
        row = results["startup"]
        print(
            f"\nstart-up, one-case suite: cer run {row['cer_run_ms']:.0f} ms, bare interpreter "
            f"{row['python_ms']:.0f} ms ({row['cer_run_ms'] / row['python_ms']:.1f}x), worker "
            f"ready {row['worker_ready_ms']:.0f} ms (load {row['load_1min']:.2f})"
        )
        verdict = "met" if row["cer_run_ms"] <= STARTUP_TARGET_MS else "NOT met"
        print(
            f"  one-case cer run / target {STARTUP_TARGET_MS} ms: "
            f"{row['cer_run_ms'] / STARTUP_TARGET_MS:.2f}x  {verdict}; above python alone "
            f"{row['cer_run_ms'] - row['python_ms']:.0f} ms"
        )
        for name, ms in row["commands_ms"].items():
            print(
                f"  {name:<18} {ms:6.0f} ms ({ms / row['python_ms']:.1f}x python alone, "
                f"{ms / row['cer_run_ms']:.2f}x the one-case run)"
            )
        print(
            f"  CPU of cer run's process tree (cer, its worker, the case's process): "
            f"{row['cer_run_cpu_ms']:.0f} ms (/usr/bin/time counts in 10 ms steps)"
        )
        imports = ", ".join(f"{name} {ms:.0f}" for name, ms in row["imports"])
        print(f"  largest imports (cumulative ms): {imports}")
    if "load" in results:
        row = results["load"]
        tomli_s, cpu = row["tomli_s"], row["cpu"]
        print(
            f"\nsuite load, {row['cases']:,} cases ({row['megabytes']:.0f} MB), median "
            "wall time, and CPU time (what a busy machine disturbs least)"
        )
        for key, label in (
            ("tomli_s", "tomli's parse"),
            ("load_s", "full load (parse + validate)"),
            ("first_s", "first load, writing the cache"),
            ("cached_s", "cached reload"),
        ):
            print(
                f"  {label:<30} {row[key]:7.3f} s  {row[key] / tomli_s:5.2f}x tomli   "
                f"CPU {cpu[key]:7.3f} s  {cpu[key] / cpu['tomli_s']:5.2f}x tomli"
            )
        print(
            f"  cache entry {row['entry_mib']:.0f} MiB; targets: first ≤ 1.20x tomli, "
            "cached < 0.5 s"
        )
    if "watch" in results:
        row = results["watch"]
        print(
            f"\nwatch loop, CommonMark-style ({row['cases']} cases), save of a fix → rows (median)"
        )
        for key in ("failed_first", "declared_order"):
            part = row[key]
            print(
                f"  {key:<15} first changed row {part['first_changed_ms']:6.0f} ms, last row "
                f"{part['last_row_ms']:6.0f} ms ({part['changed_rows']} rows changed, "
                f"{part['saves']} saves)"
            )
        print_watch_edit(row["edit"])
    if "tui-memory" in results:
        big = results["tui-memory"]
        press = big["keypress_median_ms"]
        press_text = (
            f"keypress while streaming: median {press:.0f} ms, max "
            f"{big['keypress_max_ms']:.0f} ms ({big['keypresses']} presses)"
            if press is not None
            else "no keypress measured"
        )
        print(
            f"\nTUI holding {big['cases']:,} cases: peak RSS {big['peak_rss_mib']:.0f} MiB "
            f"(target 400); {press_text}"
        )
    if "jobs" in results:
        jobs = results["jobs"]
        print(
            f"\n-j 2 on a CPU-bound implementation ({jobs['cases']} cases): "
            f"{jobs['j1_s']:.2f} s → {jobs['j2_s']:.2f} s, speed-up {jobs['speedup']:.2f}x"
        )
    if "scale" in results:
        print_scale(results["scale"])


if __name__ == "__main__":
    main()

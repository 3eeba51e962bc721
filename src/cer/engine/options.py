"""What a run is asked to do (:class:`RunOptions`) and the checks and parsers of its
values: the supervisor's half of a run's settings. Resolving them from the command
line and ``[tool.cer]`` is :mod:`cer.config`'s job."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cer.engine.kinds import ImplementationKind, kind_named
from cer.model import Suite
from cer.suite.selection import Selection

Isolation = Literal["fork", "none"]
"""How a Python implementation's cases are kept apart: each in a fresh fork of the
worker, or all inline in the worker (docs/execution-model.md)."""
SandboxMode = Literal["auto", "require", "off"]
"""Whether the implementation runs under Landlock: where the kernel has it, always (or
refuse to run), or never (see :mod:`cer.engine.confinement`)."""
NetworkMode = Literal["auto", "allow", "deny"]
"""What network the implementation gets: ``auto``, a network namespace of its own
(loopback only) wherever its world is built and the machine's elsewhere; ``allow``, the
machine's, lent; ``deny``, a network namespace of its own with TCP refused too, or no
run (see :func:`cer.engine.confinement.decide`)."""
ISOLATION_MODES: tuple[Isolation, ...] = ("fork", "none")
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "require", "off")
NETWORK_MODES: tuple[NetworkMode, ...] = ("auto", "allow", "deny")


DEFAULT_TIMEOUT = 10.0
"""A case's time limit when neither the command line nor ``[tool.cer]`` sets one."""
MAX_TIMEOUT = 86_400.0
"""The longest time limit a case may be given (a day)."""
DEFAULT_CAPTURE_LIMIT = 65536
"""Bytes of a case's stdout and stderr kept when nothing sets ``capture_limit``."""
DEFAULT_ISOLATION: Isolation = "fork"
"""How cases are kept apart when nothing says (``--isolation``, ``isolation``)."""
DEFAULT_SANDBOX: SandboxMode = "auto"
"""Whether the sandbox is used when nothing says (``--sandbox``, ``sandbox``)."""
DEFAULT_NETWORK: NetworkMode = "auto"
"""What network the implementation gets when nothing says (``--network``, ``network``)."""


OTHER_SHARD = "in another shard"
"""The reason of every case a sharded run leaves to the other shards."""


class RunCancelled(Exception):
    """The run was cancelled through its cancel event before it finished."""


@dataclass(frozen=True)
class RunOptions:
    impl: str = ""
    """``MODULE:ATTR`` of the implementation under test (ATTR may be dotted), or, for
    the command kinds, the command line (split like a shell splits words). Left empty
    when :attr:`implementation` gives the implementation itself."""
    kind: ImplementationKind = "python"
    """``python`` (import MODULE:ATTR), ``command`` (a long-lived process speaking the
    line-delimited JSON protocol, docs/protocol.md) or ``command-per-case`` (one process
    per case: input as JSON on stdin, observation as JSON on stdout): one of
    :data:`cer.engine.kinds.KINDS`."""
    paths: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    isolation: Isolation = DEFAULT_ISOLATION
    max_memory: int | None = None
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    selection: Selection = field(default_factory=Selection)
    first: frozenset[str] = frozenset()
    """Names of cases to hand to the workers before the others (the watch loop passes
    the cases that failed last time, so that the rows that matter change first); the
    results, events aside, keep the declared order whatever this holds."""
    category_models: Mapping[str, str] = field(default_factory=dict)
    """Extra category → built-in model mappings (``[tool.cer.categories]``)."""
    jobs: int = 1
    """How many workers run cases at the same time (python implementations); ``0``
    means one per available CPU (``-j auto``, see :func:`resolve_jobs`). Each worker
    imports the implementation itself; results do not depend on it."""
    shard: tuple[int, int] | None = None
    """``(I, N)``: run only the I-th of N slices of the suite (see :func:`in_shard`);
    the other cases are reported skipped with the reason :data:`OTHER_SHARD`."""
    sandbox: SandboxMode = DEFAULT_SANDBOX
    """``auto`` (Landlock where the kernel has it), ``require`` (refuse to run
    without it) or ``off``; see :mod:`cer.engine.confinement`."""
    network: NetworkMode = DEFAULT_NETWORK
    """``auto``: a network namespace of its own (loopback only) where the world is built,
    the machine's network elsewhere; ``allow``: the machine's network, lent; ``deny``: a
    network namespace of its own and TCP refused (needs the world); see
    :func:`cer.engine.confinement.decide`."""
    protected: tuple[str, ...] = ()
    """Paths the implementation may not reach at all besides the suite's own (the
    report outputs, a history database given by path)."""
    max_fail: int | None = None
    """Stop handing out cases once this many cases that ran failed or errored
    (``--max-fail N``, ``-x`` for 1); the cases not handed out are reported skipped
    with a reason from :func:`stopped_reason`, never as passed. None: run every case."""
    sandbox_read: tuple[str, ...] = ()
    """Paths the sandboxed implementation may read besides what the sandbox allows it
    (``--sandbox-read``, ``[tool.cer] sandbox_read``): see :mod:`cer.sandbox.readset`."""
    implementation: Callable[..., Any] | None = None
    """The implementation itself, a callable object (the Python API only), instead of
    :attr:`impl`: a function, a lambda, a closure, a bound method, a class or an object
    with ``__call__``. Its workers are forked from the calling process, so that they
    hold it (see :mod:`cer.engine.python.provided`); the run names it
    ``callable:MODULE:QUALNAME``."""
    dist: str | None = None
    """The installed distribution a Python adapter adapts (``dist=jsonschema``), named by
    the user so that a matrix shows its name and version; None: found from what the
    adapter's module imports, when that is one distribution."""
    parallel_bounds: bool = False
    """Run the cases with a runner-measured time bound (``elapsed_ms_max``,
    ``elapsed_ms_min``) among the others (``--parallel-bounds``). By default they run
    after them, with no other case in flight, so that other cases do not slow them."""
    baseline: str = ""
    """The known-failures file the front end holds the verdict against (``--baseline``),
    and ``baseline_sha256`` the hash of its bytes as read: recorded in the run's
    conditions, nothing else of the run depends on them."""
    baseline_sha256: str = ""
    require_coverage: bool = False
    """``--require-coverage``: recorded in the run's conditions, as the baseline is."""


STOPPED = "not run: the run was stopped after"
"""How the reason of every case a stopped run did not hand out begins."""


def stopped_reason(limit: int) -> str:
    """The reason of a case left out because ``limit`` cases had failed or errored."""
    cases = "case" if limit == 1 else "cases"
    return f"{STOPPED} {limit} failed or errored {cases} (--max-fail {limit})"


def parse_max_fail(text: str) -> int:
    """``--max-fail N`` as given on a command line: a whole number of at least 1."""
    try:
        limit = int(text.strip())
    except ValueError:
        raise ValueError(f"--max-fail must be a whole number of cases, not {text!r}") from None
    if limit < 1:
        raise ValueError(f"--max-fail must be at least 1, not {text!r}")
    return limit


def parse_jobs(text: str) -> int:
    """``-j`` as given on a command line: ``auto`` (returned as 0) or a count of at
    least 1; ValueError otherwise."""
    word = text.strip().lower()
    if word == "auto":
        return 0
    try:
        jobs = int(word)
    except ValueError:
        raise ValueError(f"-j must be a number of workers or auto, not {text!r}") from None
    if jobs < 1:
        raise ValueError(f"-j must be at least 1 (or auto), not {text!r}")
    return jobs


def resolve_jobs(jobs: int) -> int:
    """The number of workers ``jobs`` asks for: itself, or for ``0`` the CPUs this
    process may run on."""
    if jobs > 0:
        return jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def parse_shard(text: str) -> tuple[int, int]:
    """``--shard I/N`` as given on a command line, e.g. ``"2/4"`` → ``(2, 4)``; both
    whole numbers with ``1 <= I <= N``; ValueError otherwise."""
    index_text, slash, count_text = text.strip().partition("/")
    try:
        if not slash:
            raise ValueError
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"--shard must look like I/N (such as 2/4), not {text!r}") from None
    if not 1 <= index <= count:
        raise ValueError(f"--shard I/N needs 1 <= I <= N, not {text!r}")
    return index, count


def in_shard(position: int, shard: tuple[int, int] | None) -> bool:
    """Whether the case at declared ``position`` (1-based) belongs to ``shard``.

    Shard I of N holds the positions I, I + N, I + 2N, …: every case belongs to
    exactly one shard, the slices differ in size by at most one case, and neighbouring
    cases (often alike in cost) are spread over all shards. The rule looks at nothing
    but the position, so every machine of a CI matrix computes the same slices.
    """
    if shard is None:
        return True
    index, count = shard
    return (position - 1) % count == index - 1


def search_paths(suite: Suite, options: RunOptions) -> list[str]:
    """Where the worker looks for the implementation: --path entries, the suite's
    folder, the working directory."""
    paths = [str(Path(p).resolve()) for p in options.paths]
    paths.append(str(suite.directory.resolve()))
    paths.append(os.getcwd())
    return list(dict.fromkeys(paths))


def check_options(options: RunOptions) -> None:
    kind_named(options.kind)  # ValueError for a kind cer does not have
    if options.implementation is not None:
        if not callable(options.implementation):
            raise ValueError("implementation must be a callable object")
        if options.impl:
            raise ValueError("give the implementation as impl or as implementation, not both")
        if options.kind != "python":
            raise ValueError("an implementation given as an object is a Python one (kind python)")
        if not hasattr(os, "fork"):
            raise ValueError("an implementation given as an object needs fork, not available here")
    elif not options.impl:
        raise ValueError("impl is empty: name the implementation (MODULE:ATTR or a command)")
    if options.isolation not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_MODES)}")
    if not 0 < options.timeout <= MAX_TIMEOUT:
        raise ValueError(f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}")
    if type(options.jobs) is not int or options.jobs < 0:
        raise ValueError("jobs must be a whole number of workers, or 0 for one per CPU")
    if options.shard is not None:
        index, count = options.shard
        if not (type(index) is int and type(count) is int and 1 <= index <= count):
            raise ValueError("shard must be (I, N) with 1 <= I <= N")
    if options.max_fail is not None and (type(options.max_fail) is not int or options.max_fail < 1):
        raise ValueError("max_fail must be a whole number of cases, at least 1")
    if options.sandbox not in SANDBOX_MODES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}")
    if options.network not in NETWORK_MODES:
        raise ValueError(f"network must be one of {', '.join(NETWORK_MODES)}")

"""Run settings from the command line and ``[tool.cer]`` in ``pyproject.toml``.

``cer run`` and ``cer-tui`` accept the same arguments; both call
:func:`add_run_arguments` and :func:`resolve`, so a project configured once behaves the
same headless and in the terminal UI. Command-line values win over the file.

Several implementations may be named (repeated ``--impl``/``--impl-cmd``/
``--impl-cmd-per-case``, or ``impls``); :class:`ResolvedRun` then holds one RunOptions
per implementation with its column label, and ``options`` stays the first one.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from cer.engine.confinement import SandboxUnavailable, decide
from cer.engine.kinds import KINDS, ImplementationKind, kind_named
from cer.engine.options import (
    DEFAULT_CAPTURE_LIMIT,
    DEFAULT_ISOLATION,
    DEFAULT_NETWORK,
    DEFAULT_SANDBOX,
    DEFAULT_TIMEOUT,
    ISOLATION_MODES,
    MAX_TIMEOUT,
    NETWORK_MODES,
    SANDBOX_MODES,
    RunOptions,
    parse_jobs,
)
from cer.model import CASE_CLASSES
from cer.results.labels import (
    DIST_PATTERN,
    implementation_labels,
    label_problem,
    split_dist,
    split_label,
)
from cer.suite.selection import Selection

T = TypeVar("T")

RETIRED_KEYS: Mapping[str, str] = {
    "watch_timeout": (
        "cer run and cer-tui share one per-case timeout: rename watch_timeout to timeout "
        f"(default {DEFAULT_TIMEOUT:g} s)"
    ),
}
"""``[tool.cer]`` keys no longer read, and what to write instead: a file that still sets
one gets that advice rather than a setting silently ignored."""
_CONFIG_KEYS = frozenset(
    {
        "suite",
        *(kind.config_key for kind in KINDS.values()),
        "impls",
        "paths",
        "timeout",
        "isolation",
        "max_memory",
        "capture_limit",
        "categories",
        "watch",
        "theme",
        "jobs",
        "pytest_suites",
        "sandbox",
        "network",
        "history_max_mb",
        "sandbox_read",
        "baseline",
        "require_coverage",
    }
)
_SINGLE_KEYS: tuple[tuple[ImplementationKind, str], ...] = tuple(
    (kind.name, kind.config_key) for kind in KINDS.values()
)
"""The ``[tool.cer]`` keys that name one implementation, and their kinds."""
_ENTRY_KINDS: dict[str, ImplementationKind] = {kind.entry_key: kind.name for kind in KINDS.values()}
"""The keys of an ``impls`` table entry that name an implementation, and their kinds."""


class UsageError(Exception):
    """The command line or the configuration asks for something impossible."""


@dataclass(frozen=True)
class ProjectConfig:
    """``[tool.cer]`` of the nearest ``pyproject.toml``, with its location."""

    values: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def path_value(self, key: str) -> Path | None:
        value = self.values.get(key)
        return None if value is None else (self.root / str(value))

    def paths_value(self, key: str) -> tuple[Path, ...]:
        value = self.values.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise UsageError(
                f'{self.path}: [tool.cer] {key} must be a list of strings, e.g. {key} = ["src"]'
            )
        return tuple(self.root / item for item in value)


SUITE_HELP = "default: [tool.cer] suite in pyproject.toml, else ./evals.toml"
"""How every command's ``--help`` states where its suite comes from
(:func:`resolve_suite`)."""
NO_SUITE = (
    "no suite given: pass the path to an evals.toml, set suite in [tool.cer] of "
    "pyproject.toml, or run where ./evals.toml is"
)


def resolve_suite(given: Path | None, config: ProjectConfig) -> Path:
    """The suite a command works on, in the one order every command follows: the path
    given on the command line, else ``[tool.cer] suite``, else ``./evals.toml`` when there
    is one; UsageError when none applies."""
    if given is not None:
        return given
    configured = config.path_value("suite")
    if configured is not None:
        return configured
    if Path("evals.toml").is_file():
        return Path("evals.toml")
    raise UsageError(NO_SUITE)


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file with tomli when it is installed, else the standard library."""
    try:
        import tomli as toml
    except ImportError:  # pragma: no cover - tomli is a dependency
        import tomllib as toml  # type: ignore[no-redef]
    with path.open("rb") as handle:
        return toml.load(handle)


def find_project_config(start: Path | None = None) -> ProjectConfig:
    """The nearest ``pyproject.toml`` at or above ``start`` that has ``[tool.cer]``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if not candidate.is_file():
            continue
        try:
            data = load_toml(candidate)
        except (OSError, ValueError) as exc:
            raise UsageError(f"{candidate}: cannot read it: {exc}") from exc
        table = data.get("tool", {}).get("cer")
        if table is None:
            continue
        if not isinstance(table, dict):
            raise UsageError(f"{candidate}: [tool.cer] must be a table")
        retired = sorted(set(table) & set(RETIRED_KEYS))
        if retired:
            raise UsageError(f"{candidate}: [tool.cer] {retired[0]}: {RETIRED_KEYS[retired[0]]}")
        unknown = sorted(set(table) - _CONFIG_KEYS)
        if unknown:
            raise UsageError(
                f"{candidate}: unknown [tool.cer] keys: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(_CONFIG_KEYS))})"
            )
        return ProjectConfig(table, candidate)
    return ProjectConfig()


def parse_size(text: str) -> int:
    """``512M``, ``2G``, ``1048576``: a byte count for --max-memory."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)i?[bB]?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 512M or 2G)")
    number = float(match.group(1))
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2).lower()]
    size = int(number * scale)
    if size <= 0:
        raise argparse.ArgumentTypeError("the size must be positive")
    return size


def argument_type(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` as an argparse type: its ValueError becomes the usage error's text."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parse.__name__
    return convert


def positive_float(text: str) -> float:
    """A timeout in seconds on the command line: above 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}"
        )
    return value


class _ImplementationAction(argparse.Action):
    """``--impl``, ``--impl-cmd`` and ``--impl-cmd-per-case``: each use appends
    ``(kind, value)`` to ``implementations``, so mixed options keep their order. The
    option's own attribute holds its last value, as a plain store would."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        kind: ImplementationKind,
        **kwargs: Any,
    ) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.kind = kind

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = list(getattr(namespace, "implementations", None) or [])
        given.append((self.kind, values))
        namespace.implementations = given
        setattr(namespace, self.dest, values)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments shared by ``cer run`` and ``cer-tui``."""
    parser.add_argument(
        "suite",
        nargs="?",
        type=Path,
        help=f"the evals.toml to run ({SUITE_HELP})",
    )
    for kind in KINDS.values():
        parser.add_argument(
            kind.option,
            metavar=kind.metavar,
            action=_ImplementationAction,
            kind=kind.name,
            help=kind.help,
        )
    parser.add_argument(
        "--path",
        dest="paths",
        action="append",
        default=[],
        metavar="DIR",
        help="add DIR to the implementation's import path (repeatable)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        metavar="SECONDS",
        help="per-case time limit, enforced from outside, the same in cer run, cer-tui "
        f"and pytest (default {DEFAULT_TIMEOUT:g}; also timeout in [tool.cer])",
    )
    parser.add_argument(
        "--isolation",
        choices=ISOLATION_MODES,
        help="fork: each case in its own process (default, safe); none: cases share the "
        "worker process (faster, weaker)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=argument_type(parse_jobs),
        metavar="N",
        help="run cases on N workers at once (default: auto, one per CPU); results stay "
        "in declared order; cases with an elapsed_ms bound run after the others, one at "
        "a time (see --parallel-bounds)",
    )
    parser.add_argument(
        "--parallel-bounds",
        action="store_true",
        help="run cases with an elapsed_ms_max or elapsed_ms_min bound among the others "
        "instead of after them with no other case in flight",
    )
    parser.add_argument(
        "--sandbox",
        choices=SANDBOX_MODES,
        help="confine the implementation with Linux Landlock (docs/trust.md): auto (the "
        "default) where the kernel has it, require (refuse to run without it), off",
    )
    parser.add_argument(
        "--sandbox-read",
        dest="sandbox_read",
        action="append",
        default=[],
        metavar="PATH",
        help="let the sandboxed implementation also read PATH (repeatable): a data file "
        "or folder beside its modules, or a toolchain the sandbox does not find",
    )
    parser.add_argument(
        "--network",
        choices=NETWORK_MODES,
        help="the implementation's network: auto (the default) a network namespace of "
        "its own, loopback only, wherever its world is built, the machine's elsewhere; "
        "allow lends it the machine's network; deny its own namespace and no TCP, or no run",
    )
    parser.add_argument(
        "--max-memory",
        type=parse_size,
        metavar="SIZE",
        help="address-space limit for each case, e.g. 512M or 2G (default: none)",
    )
    parser.add_argument(
        "--capture-limit",
        type=parse_size,
        metavar="SIZE",
        help="bytes of stdout and of stderr kept per case (default 64K)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="a known-failures file (docs/ci.md): its cases may fail as listed; any other "
        "failure, and a listed case that now passes, still fails the run",
    )
    select = parser.add_argument_group(
        "case selection", "Unselected cases are still reported, as skipped (deselected)."
    )
    select.add_argument(
        "--case",
        dest="case_globs",
        action="append",
        default=[],
        metavar="GLOB",
        help="case names matching a shell pattern",
    )
    select.add_argument(
        "--category",
        dest="categories",
        action="append",
        default=[],
        metavar="NAME",
        help="cases of this category",
    )
    select.add_argument(
        "--class",
        dest="classes",
        action="append",
        default=[],
        choices=CASE_CLASSES,
        help="cases of this case class",
    )
    select.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=[],
        metavar="GLOB",
        help="cases with a tag matching a shell pattern",
    )
    select.add_argument(
        "-k",
        dest="substrings",
        action="append",
        default=[],
        metavar="TEXT",
        help="cases whose name contains TEXT",
    )


@dataclass(frozen=True)
class Implementation:
    """One implementation as named on the command line or in ``[tool.cer]``."""

    kind: ImplementationKind
    impl: str
    label: str | None = None
    """An explicit column label (``NAME=`` or ``label``); None for automatic."""
    dist: str | None = None
    """The distribution a Python adapter adapts (``,dist=NAME`` or ``dist``), for its
    name and version in a matrix; None: found from what the adapter imports."""


@dataclass(frozen=True)
class ResolvedRun:
    """Everything needed to start a run, after merging arguments and configuration.

    ``options`` is the first implementation's; ``implementations`` has one RunOptions
    per implementation given (one for a plain run), each with the same settings, and
    ``labels`` their unique short column labels, in the same order.
    """

    suite: Path
    options: RunOptions
    config: ProjectConfig
    implementations: tuple[RunOptions, ...] = ()
    labels: tuple[str, ...] = ()
    baseline: Path | None = None
    """The known-failures file (``--baseline``, else ``baseline`` in ``[tool.cer]``)."""
    require_coverage: bool = False
    """``--require-coverage`` or ``require_coverage = true``: an uncovered constraint
    fails the run (exit 4)."""

    def __post_init__(self) -> None:
        if not self.implementations:
            object.__setattr__(self, "implementations", (self.options,))
        if not self.labels:
            object.__setattr__(
                self,
                "labels",
                implementation_labels([(o.kind, o.impl) for o in self.implementations]),
            )
        if len(self.labels) != len(self.implementations):
            raise ValueError("one label per implementation")

    @property
    def several(self) -> bool:
        """More than one implementation: ``cer run`` shows a matrix."""
        return len(self.implementations) > 1


def resolve(
    args: argparse.Namespace, config: ProjectConfig | None = None
) -> tuple[Path, RunOptions]:
    """The suite path and the (first) implementation's run options; see
    :func:`resolve_run`."""
    resolved = resolve_run(args, config)
    return resolved.suite, resolved.options


def _given_on_command_line(args: argparse.Namespace) -> list[Implementation]:
    """The implementations named by arguments, in the order given.

    Parsed arguments carry ``implementations``; a namespace built by hand may instead set
    ``impl``, ``impl_cmd`` or ``impl_cmd_per_case`` to a string or a list of strings."""
    recorded = getattr(args, "implementations", None)
    pairs: list[tuple[ImplementationKind, Any]] = []
    if recorded:
        pairs = list(recorded)
    else:
        for kind, key in _SINGLE_KEYS:
            value = getattr(args, key, None)
            pairs.extend(
                (kind, item)
                for item in (value if isinstance(value, list | tuple) else [value])
                if item
            )
    given = []
    for kind, value in pairs:
        label = dist = None
        if isinstance(value, str):
            try:
                label, value = split_label(kind, value)
            except ValueError as exc:
                raise UsageError(f"{kind_named(kind).option} NAME=…: {exc}") from None
            try:
                value, dist = split_dist(kind, value)
            except ValueError as exc:
                raise UsageError(f"{kind_named(kind).option} …,dist=NAME: {exc}") from None
        given.append(Implementation(kind, value, label, dist))
    labels = [item.label for item in given if item.label is not None]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise UsageError(f"the implementation name {repeated[0]!r} is given twice")
    return given


def _configured(config: ProjectConfig) -> list[Implementation]:
    """The implementations ``[tool.cer]`` names: ``impls``, or else the first of
    ``impl``, ``impl_cmd`` and ``impl_cmd_per_case`` that is set."""
    values = config.values
    where = f"{config.path}: [tool.cer]"
    if "impls" not in values:
        for kind, key in _SINGLE_KEYS:
            if values.get(key):
                impl, dist = values[key], None
                if isinstance(impl, str):
                    try:
                        impl, dist = split_dist(kind, impl)
                    except ValueError as exc:
                        raise UsageError(f"{where} {key}: {exc}") from None
                return [Implementation(kind, impl, None, dist)]
        return []
    single = [key for _, key in _SINGLE_KEYS if key in values]
    if single:
        raise UsageError(
            f"{where} sets both impls and {', '.join(single)}; list every implementation in impls"
        )
    entries = values["impls"]
    example = 'impls = ["calc:evaluate", { cmd = "node calc.mjs" }]'
    if not isinstance(entries, list) or not entries:
        raise UsageError(
            f"{where} impls must be a non-empty list of implementations, e.g. {example}"
        )
    found = []
    for index, entry in enumerate(entries):
        here = f"{where} impls[{index}]"
        if isinstance(entry, str):
            try:
                label, impl = split_label("python", entry)
                impl, dist = split_dist("python", impl)
            except ValueError as exc:
                raise UsageError(f"{here}: {exc}") from None
            found.append(Implementation("python", impl, label, dist))
            continue
        if not isinstance(entry, dict):
            raise UsageError(
                f"{here} must be a string MODULE:ATTR or a table such as "
                f'{{ cmd = "node calc.mjs" }}, got {entry!r}'
            )
        unknown = sorted(set(entry) - {*_ENTRY_KINDS, "label", "dist"})
        if unknown:
            known = ", ".join(sorted({*_ENTRY_KINDS, "label", "dist"}))
            raise UsageError(f"{here}: unknown keys {', '.join(unknown)} (known: {known})")
        named = [key for key in _ENTRY_KINDS if key in entry]
        if len(named) != 1:
            *most, last = _ENTRY_KINDS
            raise UsageError(f"{here} must have exactly one of {', '.join(most)} and {last}")
        value = entry[named[0]]
        label = entry.get("label")
        if not isinstance(value, str):
            raise UsageError(f"{here}: {named[0]} must be a string, got {value!r}")
        if label is not None and (not isinstance(label, str) or label_problem(label)):
            raise UsageError(
                f"{here}: label must be letters, digits, '_', '.' or '-' (starting with a "
                f"letter or digit, at most 32 characters), got {label!r}"
            )
        dist = entry.get("dist")
        if dist is not None and (
            not isinstance(dist, str)
            or not DIST_PATTERN.match(dist)
            or not kind_named(_ENTRY_KINDS[named[0]]).python
        ):
            raise UsageError(
                f"{here}: dist must name the installed distribution a Python implementation "
                f'adapts, e.g. dist = "jsonschema", got {dist!r}'
            )
        found.append(Implementation(_ENTRY_KINDS[named[0]], value, label, dist))
    labels = [item.label for item in found if item.label is not None]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise UsageError(f"{where} impls: the label {repeated[0]!r} is used twice")
    return found


def _check_implementation(item: Implementation) -> None:
    impl, kind = item.impl, item.kind
    if not isinstance(impl, str):
        raise UsageError(f"the implementation must be a string, got {impl!r}")
    named = kind_named(kind)
    if named.python and ":" not in impl:
        raise UsageError(
            f"{named.option} must look like MODULE:ATTR (e.g. calc:evaluate), got {impl!r}"
        )
    if not named.python:
        try:
            words = shlex.split(impl)
        except ValueError as exc:
            raise UsageError(f"cannot split the command {impl!r}: {exc}") from exc
        if not words:
            raise UsageError(f"the implementation command is empty ({named.option})")


def configured_timeout(given: float | None, config: ProjectConfig) -> float:
    """The per-case timeout: ``given`` on the command line, else ``timeout`` in
    ``[tool.cer]``, else the default. One timeout for cer run, cer-tui, cer derive and
    the pytest plugin: a case that passes in CI passes in the watch loop too."""
    timeout = given if given is not None else config.values.get("timeout", DEFAULT_TIMEOUT)
    if (
        not isinstance(timeout, int | float)
        or isinstance(timeout, bool)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        where = "--timeout" if given is not None else f"{config.path}: [tool.cer] timeout"
        raise UsageError(
            f"{where} must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, "
            f"e.g. timeout = 5, not {timeout!r}"
        )
    return float(timeout)


def resolve_run(args: argparse.Namespace, config: ProjectConfig | None = None) -> ResolvedRun:
    """Merge parsed arguments with ``[tool.cer]``; UsageError when something is missing.

    Implementations named on the command line replace those of the file, all of them.
    """
    config = config if config is not None else find_project_config()
    values = config.values
    suite = resolve_suite(args.suite, config)
    given = _given_on_command_line(args) or _configured(config)
    if not given:
        raise UsageError(
            "no implementation given: pass --impl MODULE:ATTR (or --impl-cmd COMMAND), "
            "or set impl (or impls) in [tool.cer]"
        )
    for item in given:
        _check_implementation(item)
    timeout = configured_timeout(args.timeout, config)
    isolation = args.isolation or values.get("isolation", DEFAULT_ISOLATION)
    if isolation not in ISOLATION_MODES:
        raise UsageError(f"isolation must be one of {', '.join(ISOLATION_MODES)}")
    max_memory = args.max_memory
    if max_memory is None and values.get("max_memory") is not None:
        max_memory = _config_size(values["max_memory"], "max_memory")
    capture_limit = args.capture_limit
    if capture_limit is None:
        capture_limit = _config_size(
            values.get("capture_limit", DEFAULT_CAPTURE_LIMIT), "capture_limit"
        )
    categories = values.get("categories", {})
    if not isinstance(categories, dict) or not all(isinstance(v, str) for v in categories.values()):
        raise UsageError("[tool.cer.categories] must map category names to model names")
    jobs = getattr(args, "jobs", None)
    if jobs is None:
        configured = values.get("jobs", "auto")
        try:
            jobs = parse_jobs(str(configured)) if not isinstance(configured, bool) else -1
        except ValueError as exc:
            raise UsageError(f"[tool.cer] jobs: {exc}") from None
        if jobs < 0:
            raise UsageError('[tool.cer] jobs must be a number of workers or "auto"')
    sandbox_mode = getattr(args, "sandbox", None) or values.get("sandbox", DEFAULT_SANDBOX)
    if sandbox_mode not in SANDBOX_MODES:
        raise UsageError(f"[tool.cer] sandbox must be one of {', '.join(SANDBOX_MODES)}")
    network = getattr(args, "network", None) or values.get("network", DEFAULT_NETWORK)
    if network not in NETWORK_MODES:
        raise UsageError(f"[tool.cer] network must be one of {', '.join(NETWORK_MODES)}")
    try:
        decide(sandbox_mode, network)
    except SandboxUnavailable as exc:
        raise UsageError(str(exc)) from None
    paths = (*config.paths_value("paths"), *(Path(p) for p in args.paths))
    sandbox_read = (
        *config.paths_value("sandbox_read"),
        *(Path(p) for p in getattr(args, "sandbox_read", None) or ()),
    )
    # A mistyped folder would otherwise be passed over without a word.
    for given_path, option, wanted in (
        *((path, "--path / [tool.cer] paths", "folder") for path in paths),
        *(
            (path, "--sandbox-read / [tool.cer] sandbox_read", "file or folder")
            for path in sandbox_read
        ),
    ):
        there = given_path.is_dir() if wanted == "folder" else given_path.exists()
        if not there:
            raise UsageError(f"{option}: {given_path}: no such {wanted}")
    selection = Selection(
        case_globs=tuple(args.case_globs),
        categories=tuple(args.categories),
        classes=tuple(args.classes),
        tags=tuple(args.tags),
        substrings=tuple(args.substrings),
    )
    implementations = tuple(
        RunOptions(
            impl=item.impl,
            kind=item.kind,
            paths=tuple(str(p) for p in paths),
            timeout=float(timeout),
            isolation=isolation,
            max_memory=max_memory,
            capture_limit=capture_limit,
            selection=selection,
            category_models=dict(categories),
            jobs=jobs,
            shard=getattr(args, "shard", None),
            max_fail=getattr(args, "max_fail", None),
            sandbox=sandbox_mode,
            network=network,
            sandbox_read=tuple(str(p.resolve()) for p in sandbox_read),
            parallel_bounds=bool(getattr(args, "parallel_bounds", False)),
            dist=item.dist,
        )
        for item in given
    )
    labels = implementation_labels(
        [(item.kind, item.impl) for item in given], [item.label for item in given]
    )
    baseline = getattr(args, "baseline", None)
    if baseline is None:
        baseline = config.path_value("baseline")
    require_coverage = bool(getattr(args, "require_coverage", False))
    if not require_coverage and "require_coverage" in values:
        if not isinstance(values["require_coverage"], bool):
            raise UsageError(f"{config.path}: [tool.cer] require_coverage must be true or false")
        require_coverage = values["require_coverage"]
    return ResolvedRun(
        Path(suite),
        implementations[0],
        config,
        implementations,
        labels,
        baseline=None if baseline is None else Path(baseline),
        require_coverage=require_coverage,
    )


def history_max_bytes(config: ProjectConfig) -> int:
    """``[tool.cer] history_max_mb`` in bytes (the size the history's runs may take);
    UsageError when it is not a positive number."""
    from cer.history.budget import DEFAULT_HISTORY_MAX_MB  # only where history is used

    value = config.values.get("history_max_mb", DEFAULT_HISTORY_MAX_MB)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UsageError(f"{config.path}: [tool.cer] history_max_mb must be a number above 0")
    return int(value * 1024 * 1024)


def configured_history_max_bytes(start: Path | None = None) -> int | None:
    """``[tool.cer] history_max_mb`` (in bytes) of the project around ``start``, or None
    (the history's default) when there is none or it cannot be read: for the front
    ends that record without a command line of their own (``cer-tui``)."""
    try:
        return history_max_bytes(find_project_config(start))
    except UsageError:
        return None


def _config_size(value: Any, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        try:
            return parse_size(value)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"[tool.cer] {key}: {exc}") from exc
    raise UsageError(f"[tool.cer] {key} must be a size such as 512M")


def repro_command(suite_path: Path, options: RunOptions, case_name: str) -> str:
    """A one-line ``cer run`` that reruns one case with the same options."""
    return repro_command_many(suite_path, (options,), case_name)


def repro_command_many(
    suite_path: Path, implementations: Sequence[RunOptions], case_name: str
) -> str:
    """A one-line ``cer run`` that reruns one case against every implementation, each
    named by the option of its kind; the other settings are shared, so the first
    implementation's are used."""
    options = implementations[0]
    words = ["cer", "run", str(suite_path)]
    for each in implementations:
        words += [kind_named(each.kind).option, each.impl]
    for path in options.paths:
        words += ["--path", path]
    defaults = RunOptions(impl=options.impl)
    if options.timeout != defaults.timeout:
        words += ["--timeout", f"{options.timeout:g}"]
    if options.isolation != defaults.isolation:
        words += ["--isolation", options.isolation]
    if options.max_memory is not None:
        words += ["--max-memory", str(options.max_memory)]
    words += ["--case", case_name]
    return shlex.join(words)

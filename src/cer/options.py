"""Run settings from the command line and ``[tool.cer]`` in ``pyproject.toml``.

``cer run`` and ``cer-tui`` accept the same arguments; both call
:func:`add_run_arguments` and :func:`resolve`, so a project configured once behaves the
same headless and in the terminal UI. Command-line values win over the file.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cer.model import CASE_CLASSES
from cer.runner import ISOLATION_MODES, RunOptions
from cer.selection import Selection

DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 86_400.0
DEFAULT_CAPTURE_LIMIT = 65536
_CONFIG_KEYS = frozenset(
    {"suite", "impl", "impl_cmd", "impl_cmd_per_case", "paths", "timeout", "isolation",
     "max_memory", "capture_limit", "categories", "watch", "theme"}
)


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
                f"{self.path}: [tool.cer] {key} must be a list of strings, e.g. {key} = [\"src\"]"
            )
        return tuple(self.root / item for item in value)


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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}"
        )
    return value


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments shared by ``cer run`` and ``cer-tui``."""
    parser.add_argument(
        "suite", nargs="?", type=Path,
        help="the evals.toml to run (default: [tool.cer] suite in pyproject.toml)",
    )
    parser.add_argument(
        "--impl", metavar="MODULE:ATTR",
        help="the implementation under test: a function, a class (one instance per case) "
        "or an object with run_case(case); the suite's folder and the working directory "
        "are on the import path",
    )
    parser.add_argument(
        "--impl-cmd", metavar="'COMMAND ARGS'",
        help="the implementation is a long-lived process speaking the line-delimited JSON "
        "protocol of docs/protocol.md on stdin/stdout (split like a shell, never run "
        "through one)",
    )
    parser.add_argument(
        "--impl-cmd-per-case", metavar="'COMMAND ARGS'",
        help="the implementation is a command run once per case: the case as JSON on "
        "stdin, the observation as JSON on stdout, exit status 0",
    )
    parser.add_argument(
        "--path", dest="paths", action="append", default=[], metavar="DIR",
        help="add DIR to the implementation's import path (repeatable)",
    )
    parser.add_argument(
        "--timeout", type=_positive_float, metavar="SECONDS",
        help=f"per-case time limit, enforced from outside (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--isolation", choices=ISOLATION_MODES,
        help="fork: each case in its own process (default, safe); none: cases share the "
        "worker process (faster, weaker)",
    )
    parser.add_argument(
        "--max-memory", type=parse_size, metavar="SIZE",
        help="address-space limit for each case, e.g. 512M or 2G (default: none)",
    )
    parser.add_argument(
        "--capture-limit", type=parse_size, metavar="SIZE",
        help="bytes of stdout and of stderr kept per case (default 64K)",
    )
    select = parser.add_argument_group(
        "case selection", "Unselected cases are still reported, as skipped (deselected)."
    )
    select.add_argument("--case", dest="case_globs", action="append", default=[],
                        metavar="GLOB", help="case names matching a shell pattern")
    select.add_argument("--category", dest="categories", action="append", default=[],
                        metavar="NAME", help="cases of this category")
    select.add_argument("--class", dest="classes", action="append", default=[],
                        choices=CASE_CLASSES, help="cases of this case class")
    select.add_argument("--tag", dest="tags", action="append", default=[],
                        metavar="GLOB", help="cases with a tag matching a shell pattern")
    select.add_argument("-k", dest="substrings", action="append", default=[],
                        metavar="TEXT", help="cases whose name contains TEXT")


@dataclass(frozen=True)
class ResolvedRun:
    """Everything needed to start a run, after merging arguments and configuration."""

    suite: Path
    options: RunOptions
    config: ProjectConfig


def resolve(
    args: argparse.Namespace, config: ProjectConfig | None = None
) -> tuple[Path, RunOptions]:
    """The suite path and run options; see :func:`resolve_run`."""
    resolved = resolve_run(args, config)
    return resolved.suite, resolved.options


def resolve_run(args: argparse.Namespace, config: ProjectConfig | None = None) -> ResolvedRun:
    """Merge parsed arguments with ``[tool.cer]``; UsageError when something is missing."""
    config = config if config is not None else find_project_config()
    values = config.values
    suite = args.suite if args.suite is not None else config.path_value("suite")
    if suite is None:
        raise UsageError(
            "no suite given: pass the path to an evals.toml, or set suite in [tool.cer]"
        )
    given = [
        (kind, value)
        for kind, value in (
            ("python", getattr(args, "impl", None)),
            ("command", getattr(args, "impl_cmd", None)),
            ("command-per-case", getattr(args, "impl_cmd_per_case", None)),
        )
        if value
    ]
    if len(given) > 1:
        raise UsageError("give one of --impl, --impl-cmd and --impl-cmd-per-case, not several")
    if not given:
        for kind, key in (("python", "impl"), ("command", "impl_cmd"),
                          ("command-per-case", "impl_cmd_per_case")):
            if values.get(key):
                given.append((kind, values[key]))
    if not given:
        raise UsageError(
            "no implementation given: pass --impl MODULE:ATTR (or --impl-cmd COMMAND), "
            "or set impl in [tool.cer]"
        )
    kind, impl = given[0]
    if not isinstance(impl, str):
        raise UsageError(f"the implementation must be a string, got {impl!r}")
    if kind == "python" and ":" not in impl:
        raise UsageError(f"--impl must look like MODULE:ATTR (e.g. calc:evaluate), got {impl!r}")
    if kind != "python":
        import shlex

        try:
            words = shlex.split(impl)
        except ValueError as exc:
            raise UsageError(f"cannot split the command {impl!r}: {exc}") from exc
        if not words:
            raise UsageError("the implementation command is empty")
    timeout = args.timeout if args.timeout is not None else values.get("timeout", DEFAULT_TIMEOUT)
    isolation = args.isolation or values.get("isolation", "fork")
    if isolation not in ISOLATION_MODES:
        raise UsageError(f"isolation must be one of {', '.join(ISOLATION_MODES)}")
    if (
        not isinstance(timeout, int | float)
        or isinstance(timeout, bool)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        raise UsageError(f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}")
    max_memory = args.max_memory
    if max_memory is None and values.get("max_memory") is not None:
        max_memory = _config_size(values["max_memory"], "max_memory")
    capture_limit = args.capture_limit
    if capture_limit is None:
        capture_limit = _config_size(values.get("capture_limit", DEFAULT_CAPTURE_LIMIT),
                                     "capture_limit")
    categories = values.get("categories", {})
    if not isinstance(categories, dict) or not all(
        isinstance(v, str) for v in categories.values()
    ):
        raise UsageError("[tool.cer.categories] must map category names to model names")
    paths = (*config.paths_value("paths"), *(Path(p) for p in args.paths))
    selection = Selection(
        case_globs=tuple(args.case_globs),
        categories=tuple(args.categories),
        classes=tuple(args.classes),
        tags=tuple(args.tags),
        substrings=tuple(args.substrings),
    )
    options = RunOptions(
        impl=impl,
        kind=kind,
        paths=tuple(str(p) for p in paths),
        timeout=float(timeout),
        isolation=isolation,
        max_memory=max_memory,
        capture_limit=capture_limit,
        selection=selection,
        category_models=dict(categories),
    )
    return ResolvedRun(Path(suite), options, config)


def _config_size(value: Any, key: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        try:
            return parse_size(value)
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"[tool.cer] {key}: {exc}") from exc
    raise UsageError(f"[tool.cer] {key} must be a size such as 512M")

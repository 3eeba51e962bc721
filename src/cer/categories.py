"""Which execution model runs each case category.

The built-in model ``call`` invokes the implementation once with the case's input and
compares what it observed. Categories the registry does not know are skipped with
"category not supported: NAME" — never run on a guess, never counted as passed.

Users extend the registry in two ways: ``[tool.cer.categories]`` maps a category to a
built-in category or model (``concurrency = "functional"``), and a Python package can
declare an entry point in the group ``cer.categories`` whose name is the category and
whose object has ``execute(invoke, case)``; it runs in the case's process, calls
``invoke(input)`` as often as it needs, and returns the observation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

CALL = "call"
"""The built-in model: call the implementation once and compare."""

BUILTIN_CATEGORIES: Mapping[str, str] = {
    "functional": CALL,
    "interface": CALL,
    "input-validation": CALL,
    "failure-mode": CALL,
    "timing": CALL,
    "resource": CALL,
}

ENTRY_POINT_GROUP = "cer.categories"
ENTRY_POINT_PREFIX = "entrypoint:"


class CategoryConfigError(ValueError):
    """A user mapping names a model that does not exist."""


@dataclass(frozen=True)
class CategoryRegistry:
    """Category name → model. A model is ``call`` or ``entrypoint:MODULE:ATTR``.

    Installed entry points are consulted only for a category nothing else names, so a
    suite of built-in categories never pays for scanning the installed packages.
    """

    models: Mapping[str, str] = field(default_factory=lambda: dict(BUILTIN_CATEGORIES))
    entry_points: bool = True
    _discovered: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def model_for(self, category: str) -> str | None:
        """The model that runs ``category``, or None when it is not supported."""
        model = self.models.get(category)
        if model is None and self.entry_points:
            if not self._discovered:
                self._discovered.update(_entry_point_models())
                self._discovered.setdefault("", "")  # scanned, even when nothing was found
            model = self._discovered.get(category) or None
        return model

    def provider_for(self, category: str) -> str:
        """The installed package whose ``cer.categories`` entry point runs ``category``,
        as ``NAME VERSION (entry point MODULE:ATTR)``: what a run's evidence names,
        since that package, not the runner, decides the category's cases."""
        model = self.model_for(category) or ""
        return _entry_point_providers().get(
            category,
            f"an installed package of unknown name and version (entry point "
            f"{model.removeprefix(ENTRY_POINT_PREFIX)})",
        )


def build_registry(
    user_mapping: Mapping[str, str] | None = None, *, entry_points: bool = True
) -> CategoryRegistry:
    """The built-in categories, plus the user's mapping, plus installed entry points."""
    models = dict(BUILTIN_CATEGORIES)
    for category, target in (user_mapping or {}).items():
        if target == CALL:
            models[category] = CALL
        elif target in models:
            models[category] = models[target]
        else:
            known = ", ".join(sorted({*models, CALL}))
            raise CategoryConfigError(
                f"category {category!r} is mapped to {target!r}, which is neither a "
                f"built-in model nor a known category (known: {known})"
            )
    return CategoryRegistry(models, entry_points)


def _entry_point_providers() -> dict[str, str]:
    """Category → the package of the entry point that runs it, with its version."""
    from importlib.metadata import entry_points

    found = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(point, "dist", None)
        name = getattr(dist, "name", None) or "an unnamed package"
        version = getattr(dist, "version", None) or "of unknown version"
        found[point.name] = f"{name} {version} (entry point {point.value})"
    return found


def _entry_point_models() -> dict[str, str]:
    from importlib.metadata import entry_points

    found = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found[point.name] = ENTRY_POINT_PREFIX + point.value
    return found

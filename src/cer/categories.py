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
    """Category name → model. A model is ``call`` or ``entrypoint:MODULE:ATTR``."""

    models: Mapping[str, str] = field(default_factory=lambda: dict(BUILTIN_CATEGORIES))

    def model_for(self, category: str) -> str | None:
        """The model that runs ``category``, or None when it is not supported."""
        return self.models.get(category)


def build_registry(
    user_mapping: Mapping[str, str] | None = None, *, entry_points: bool = True
) -> CategoryRegistry:
    """The built-in categories, plus installed entry points, plus the user's mapping."""
    models = dict(BUILTIN_CATEGORIES)
    if entry_points:
        models.update(_entry_point_models())
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
    return CategoryRegistry(models)


def _entry_point_models() -> dict[str, str]:
    from importlib.metadata import entry_points

    found = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found[point.name] = ENTRY_POINT_PREFIX + point.value
    return found

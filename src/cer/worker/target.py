"""The target: what ``MODULE:ATTR`` names in the implementation (a function, a class
to instantiate, a category's model), and the models loaded for it."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from cer.caseview import CaseView


class SetupFailed(Exception):
    """Preparing to call the implementation failed (instantiating its class, loading a
    category model): not the implementation's answer to the input, so never a
    rejection."""


class Target:
    """How to call the implementation for one case, decided once at import."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        if inspect.isclass(obj):
            self.kind = "class"
        elif callable(getattr(obj, "run_case", None)):
            self.kind = "run_case"
        elif callable(obj):
            self.kind = "callable"
        else:
            raise TypeError(
                f"{type(obj).__name__} object is neither a class, an object with "
                "run_case(case), nor a callable"
            )
        self.signature: inspect.Signature | None = None
        if self.kind == "callable":
            self.signature = _signature(obj)

    def invoke(self, view: CaseView, box: list[Any]) -> None:
        """Call the implementation for one case and put what it returned in ``box[0]``.

        The value is stored in the frame that made the call, on the same line, so that
        anything raised after the implementation returned (a profile or trace hook, the
        runner's own code) is told apart from the implementation's own refusal.
        """
        if self.kind == "class":
            try:
                instance = self.obj()
            except Exception as exc:
                raise SetupFailed(f"instantiating {self.obj.__name__}() raised") from exc
            run_case = getattr(instance, "run_case", None)
            if callable(run_case):
                _call(run_case, _signature(run_case), (view,), {}, box)
                return
            if not callable(instance):
                raise TypeError(
                    f"instances of {self.obj.__name__} have neither run_case(case) nor __call__"
                )
            _call_with_input(instance, _signature(instance), view.input, box)
            return
        if self.kind == "run_case":
            _call(self.obj.run_case, _signature(self.obj.run_case), (view,), {}, box)
            return
        _call_with_input(self.obj, self.signature, view.input, box)


_MODELS: dict[str, Any] = {}


def load_model(spec: str) -> Any:
    """The category model named ``entrypoint:MODULE:ATTR``, imported once."""
    if spec not in _MODELS:
        module_name, _, attr = spec.removeprefix("entrypoint:").partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            if part:
                obj = getattr(obj, part)
        _MODELS[spec] = obj
    return _MODELS[spec]


def _signature(func: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _name_of(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return name if type(name) is str else type(func).__name__


def _call_with_input(
    func: Any, signature: inspect.Signature | None, data: dict[str, Any], box: list[Any]
) -> None:
    """Call ``func`` with the input's keys as keyword arguments when its signature
    takes them, else with the input table as its one argument."""
    if signature is not None:
        try:
            signature.bind(**data)
        except TypeError:
            pass
        else:
            _call(func, None, (), data, box)
            return
    _call(func, signature, (data,), {}, box)


def _call(
    func: Any,
    signature: inspect.Signature | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    box: list[Any],
) -> None:
    """Call ``func`` once the arguments are known to bind: a function that cannot even
    be called with the case's input did not refuse the input, so that is never a
    rejection (SetupFailed)."""
    if signature is not None:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise SetupFailed(
                f"cannot call {_name_of(func)} with the case's input: {exc}"
            ) from None
    if inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004
    ):
        import asyncio

        box[0] = asyncio.run(func(*args, **kwargs))
        return
    box[0] = func(*args, **kwargs)

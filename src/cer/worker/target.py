"""The target: what ``MODULE:ATTR`` names in the implementation (a function, a class
to instantiate, a category's model), and the models loaded for it."""

from __future__ import annotations

import importlib
import inspect
from types import FunctionType, MethodType
from typing import Any

from cer.wire.caseview import CaseView


class SetupFailed(Exception):
    """Preparing to call the implementation failed (instantiating its class, loading a
    category model): not the implementation's answer to the input, so never a
    rejection."""


class CallMisfit(SetupFailed):
    """The case's input does not fit the implementation's signature: the runner did not
    call it, so whatever happens is never the implementation's refusal."""


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
        self.shape: Shape | None = None
        self.is_async = False
        self.call_note = ""
        """How the last call was made when it was not the plain one: the whole input
        as one argument (see :meth:`Shape.one_dict`); shown in the case's reason."""
        self.read_from: tuple[Any, ...] | None = None
        """What the signature was read from (see :func:`_signature_source`)."""
        if self.kind == "callable":
            self._read_signature()
        self._methods: dict[int, tuple[Any, bool, bool, tuple[Any, ...] | None]] = {}
        """For each function a ``run_case`` method was made of (by id, with the function
        held): whether it takes the case as its one argument, and whether it is a
        coroutine function. Learnt here for an object's method, so that every case's
        process inherits it."""
        if self.kind == "run_case" and type(obj.run_case) is MethodType:
            self._method_facts(obj.run_case)

    def _read_signature(self) -> None:
        obj = self.obj
        self.read_from = _signature_source(obj)
        self.signature = _signature(obj)
        self.shape = Shape(self.signature) if self.signature is not None else None
        self.is_async = _is_async(obj)

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
                self._call_method(run_case, view, box)
                return
            if not callable(instance):
                raise TypeError(
                    f"instances of {self.obj.__name__} have neither run_case(case) nor __call__"
                )
            signature = _signature(instance)
            shape = Shape(signature) if signature is not None else None
            self._call_input(instance, _is_async(instance), shape, view.input, box)
            return
        if self.kind == "run_case":
            self._call_method(self.obj.run_case, view, box)
            return
        if self.read_from is not None and _signature_source(self.obj) != self.read_from:
            self._read_signature()  # the function was changed since (its code, defaults)
        self._call_input(self.obj, self.is_async, self.shape, view.input, box)

    def _call_input(
        self, func: Any, is_async: bool, shape: Shape | None, data: Any, box: list[Any]
    ) -> None:
        """Call ``func(**input)`` when the input binds; else ``func(input)`` only when the
        signature names exactly one parameter and no key of the input names it (noted
        for the case's reason); else nothing is called (CallMisfit)."""
        if shape is None:
            self.call_note = (
                f"the signature of {_name_of(func)} could not be read, so it was called with "
                "the whole input as its one argument"
            )
            _call_known(func, is_async, (data,), {}, box)
        elif shape.takes_keywords(data):
            _call_known(func, is_async, (), data, box)
        elif shape.one_dict(data):
            self.call_note = (
                f"{_name_of(func)} was called with the whole input as its one argument: its "
                f"one parameter `{shape.single}` names no key of the input"
            )
            _call_known(func, is_async, (data,), {}, box)
        else:
            raise CallMisfit(shape.misfit(_name_of(func), data))

    def _call_method(self, method: Any, view: CaseView, box: list[Any]) -> None:
        """Call ``run_case(case)``; what its function takes is found once per function
        (a bound method's signature is its function's without ``self``)."""
        if type(method) is not MethodType:
            _call(method, _signature(method), (view,), {}, box)
            return
        takes_one, is_async = self._method_facts(method)
        if not takes_one:
            _call(method, _signature(method), (view,), {}, box)  # raises SetupFailed
            return
        _call_known(method, is_async, (view,), {}, box)

    def _method_facts(self, method: MethodType) -> tuple[bool, bool]:
        function = method.__func__
        known = self._methods.get(id(function))
        if (
            known is None
            or known[0] is not function
            or known[3] is None
            or _signature_source(function) != known[3]
        ):
            source = _signature_source(function)
            signature = _signature(method)
            takes_one = signature is None or Shape(signature).one_argument
            known = (function, takes_one, _is_async(method), source)
            self._methods[id(function)] = known
        return known[1], known[2]


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


_SIGNATURE_ATTRIBUTES = ("__signature__", "__wrapped__", "_partialmethod")
"""Attributes of a function that :func:`inspect.signature` reads before its code."""


def _signature_source(func: Any) -> tuple[Any, ...] | None:
    """Everything :func:`inspect.signature` reads of a plain function (its code, its
    defaults, the names of its keyword defaults), to tell at once that a signature
    read earlier still holds; None when that cannot be told this way (not a plain
    function, or one with a ``__signature__``, ``__wrapped__`` or ``_partialmethod``
    of its own): a ``run_case`` method's signature is then read for every call, a
    callable's once, at the import.

    Without isolation a case runs in the worker, and with fork isolation a thread the
    import started runs there too: either can give the function other parameters
    after its signature was read. A call that could not bind is the runner's problem
    (errored), never the implementation's refusal of the input.
    """
    if type(func) is not FunctionType:
        return None
    attributes = func.__dict__
    if any(name in attributes for name in _SIGNATURE_ATTRIBUTES):
        return None
    keywords = func.__kwdefaults__
    return (func.__code__, func.__defaults__, tuple(keywords) if keywords else ())


def _signature(func: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _name_of(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return name if type(name) is str else type(func).__name__


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
    _call_known(func, _is_async(func), args, kwargs, box)


def _is_async(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004
    )


def _call_known(
    func: Any, is_async: bool, args: tuple[Any, ...], kwargs: dict[str, Any], box: list[Any]
) -> None:
    """Call ``func``, known to take these arguments; see :meth:`Target.invoke` for why
    the value is stored on the line of the call."""
    if is_async:
        import asyncio

        box[0] = asyncio.run(func(*args, **kwargs))
        return
    box[0] = func(*args, **kwargs)


class Shape:
    """What a signature takes, decided once from its parameters exactly as
    ``inspect.Signature.bind`` decides it for each call (``bind(**data)`` and
    ``bind(data)``), which costs microseconds and, in a forked case process, the
    copy-on-write faults of the pages of ``inspect``'s code it runs."""

    __slots__ = (
        "keywords_never",
        "names",
        "one_argument",
        "positional_only",
        "required",
        "single",
        "var",
    )

    def __init__(self, signature: inspect.Signature) -> None:
        parameter = inspect.Parameter
        names: set[str] = set()
        required: set[str] = set()
        positional_only: set[str] = set()
        self.var = False  # takes **kwargs
        self.keywords_never = False  # a positional-only parameter without a default
        listed = list(signature.parameters.values())
        for param in listed:
            if param.kind is parameter.VAR_KEYWORD:
                self.var = True
            elif param.kind is parameter.POSITIONAL_ONLY:
                positional_only.add(param.name)
                if param.default is parameter.empty:
                    self.keywords_never = True
            elif param.kind is not parameter.VAR_POSITIONAL:
                names.add(param.name)
                if param.default is parameter.empty:
                    required.add(param.name)
        self.names = frozenset(names)
        self.required = frozenset(required)
        self.positional_only = frozenset(positional_only)
        varying = (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        self.one_argument = bool(listed) and (
            listed[0].kind not in (parameter.KEYWORD_ONLY, parameter.VAR_KEYWORD)
            and all(p.kind in varying or p.default is not parameter.empty for p in listed[1:])
        )
        """``bind(data)`` succeeds: one positional argument, nothing else required."""
        named = [p for p in listed if p.kind not in varying]
        self.single = (
            named[0].name
            if len(named) == 1 and not self.var and named[0].kind is not parameter.KEYWORD_ONLY
            else None
        )
        """The one parameter the signature names, when it names exactly one that takes a
        positional argument and has no ``**kwargs``: the one-dict form's parameter."""

    def one_dict(self, data: dict[str, Any]) -> bool:
        """Whether the call is ``func(input)``: the signature names exactly one parameter
        (:attr:`single`) and no key of the input names it, so the input's keys cannot
        be meant as its arguments."""
        single = self.single
        return single is not None and (single in self.positional_only or single not in data)

    def misfit(self, name: str, data: dict[str, Any]) -> str:
        """Why the input binds neither way, naming the parameters and keys concerned."""
        missing = [f"`{key}`" for key in sorted(self.required) if key not in data]
        if self.keywords_never:
            missing += [f"`{key}` (positional-only)" for key in sorted(self.positional_only)]
        unexpected = [
            f"`{key}`"
            for key in data
            if key in self.positional_only or (key not in self.names and not self.var)
        ]
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing[:10])}")
        if unexpected:
            parts.append(f"unexpected {', '.join(unexpected[:10])}")
        return (
            f"the input does not fit the signature of {name}: "
            f"{', '.join(parts) or 'it binds no way'} (so {name} was not called with the "
            "case's input: its keys are the keyword arguments, or the input is the one "
            "argument of a signature that names exactly one parameter no key names)"
        )

    def takes_keywords(self, data: dict[str, Any]) -> bool:
        """Whether ``bind(**data)`` succeeds."""
        if self.keywords_never or not self.positional_only.isdisjoint(data):
            return False
        keys = data.keys()
        if not keys >= self.required:
            return False
        return self.var or keys <= self.names

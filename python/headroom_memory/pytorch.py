"""Automatic stages for PyTorch: a stage per top-level component, with no marks in the code.

:func:`watch_modules` takes a diffusers pipeline (anything with a ``components`` mapping), a
``torch.nn.Module`` (its direct children are the components), or any object whose attributes
hold modules. A ``ModuleList`` or ``ModuleDict`` among them, which is never called itself, is
one component whose entries all mark its name (a transformer's ``blocks``). Each component
gets one forward pre-hook, and its ``encode``/``decode`` methods (a VAE's, which pipelines call
instead of ``forward``) a thin wrapper; each marks the component's name (``vae.decode``) when
it starts, unless that stage is already the current one (whoever marked it: a mark of the
user's own in between makes the component's next call mark it again), so a denoising loop
that calls the transformer fifty times marks it once. Nothing is hooked below the top level:
a forward pass pays one Python call per component call.

:func:`watch_calls` is the no-code-change path (``python -m headroom_memory gen.py``). It
finds the top-level modules as they are first called: a global forward pre-hook looks, for a
module it has not seen, at the calls under way (the Python stack) for the outermost module
whose code is running; that module is a component, named after its class, or ``Class.method``
when its work began in a method other than ``forward`` (``AutoencoderKL.decode``). The
component then gets the hooks :func:`watch_modules` gives, and every module inside it is
known. Once every module built so far is known, the global hook is taken off, so a forward
pass costs what it costs under :func:`watch_modules`; building a new module (``Module.__init__``
is wrapped for this) puts the hook back until that module has been called.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
import weakref
from collections.abc import Iterator
from typing import Any

from ._stages import last_marked, mark

_state = threading.local()
_lock = threading.RLock()

#: The frames of a module's call itself, not of a method of its own that began the work.
_CALLING = frozenset(("_call_impl", "__call__", "_wrapped_call_impl", "forward"))


def _enter(name: str) -> None:
    """Marks ``name`` unless it is the stage this process marked last."""
    if last_marked() != name:
        mark(name)


def components(obj: Any) -> Iterator[tuple[str, Any]]:
    """The top-level components of ``obj``: (name, module) pairs. The entries of a
    ``ModuleList`` or ``ModuleDict`` (never called themselves) come under its name."""
    import torch

    found = getattr(obj, "components", None)
    if isinstance(found, dict):
        items = list(found.items())
    elif isinstance(obj, torch.nn.Module):
        items = list(obj.named_children())
    else:
        items = list(vars(obj).items())
    for name, value in items:
        if not isinstance(value, torch.nn.Module) or name.startswith("_"):
            continue
        if isinstance(value, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            for entry in value.children():
                yield name, entry
        else:
            yield name, value


def watch_modules(pipeline_or_module: Any) -> Any:
    """Hooks every top-level component of ``pipeline_or_module`` (see the module docs);
    returns it. Hooking the same object twice hooks nothing more."""
    for name, module in components(pipeline_or_module):
        _hook(module, name, ("encode", "decode"))
    return pipeline_or_module


class _Ids:
    """Objects by identity, each with a value, holding none of them: their own ``__hash__``
    and ``__eq__`` (which a subclass may define, or break before its ``__init__`` is done)
    are never called, and an object that is freed leaves."""

    def __init__(self) -> None:
        self._refs: dict[int, tuple[weakref.ref[Any], str]] = {}

    def add(self, obj: Any, value: str = "") -> None:
        key = id(obj)

        def gone(ref: weakref.ref[Any], key: int = key) -> None:
            if self._refs.get(key, (None, ""))[0] is ref:
                self._refs.pop(key, None)

        try:
            self._refs[key] = (weakref.ref(obj, gone), value)
        except TypeError:
            pass  # not weakly referable: not kept

    def get(self, obj: Any) -> str | None:
        entry = self._refs.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else None

    def __contains__(self, obj: Any) -> bool:
        return self.get(obj) is not None

    def discard(self, obj: Any) -> None:
        if obj in self:
            self._refs.pop(id(obj), None)

    def __len__(self) -> int:
        return len(self._refs)


#: The hooked components, each with the name its stages take.
_names = _Ids()


def _hook(module: Any, name: str, methods: tuple[str, ...]) -> None:
    """A forward pre-hook marking ``name``, and ``name.method`` around each of ``methods``."""
    if getattr(module, "_headroom_watched", False):
        return
    module.register_forward_pre_hook(functools.partial(_pre_hook, name))
    _names.add(module, name)
    for method in methods:
        _wrap_method(type(module), method)
    module._headroom_watched = True


def _wrap_method(cls: type, method: str) -> None:
    """``cls.method`` marks ``NAME.method`` when a hooked component (:data:`_names`) calls
    it, and does nothing more for any other instance. The wrapper is the class's, not the
    instance's: a hooked module still pickles, copies and is freed as before. Only a plain
    function is wrapped, once."""
    original = inspect.getattr_static(cls, method, None)
    if not isinstance(original, types.FunctionType) or getattr(original, "_headroom", False):
        return

    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = _names.get(self)
        if name is None:
            return original(self, *args, **kwargs)
        _enter(f"{name}.{method}")
        _state.inside = getattr(_state, "inside", 0) + 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _state.inside -= 1

    call._headroom = True  # type: ignore[attr-defined]
    setattr(cls, method, call)


def _pre_hook(name: str, _module: Any, _inputs: Any) -> None:
    # A component's own method under way (its decode calling its forward) keeps its name.
    if not getattr(_state, "inside", 0):
        _enter(name)


class _Calls:
    """The no-code path (:func:`watch_calls`): which modules are known, which were built and
    not yet called, and the global hook while any such module is left."""

    def __init__(self) -> None:
        self.known = _Ids()
        self.pending = _Ids()
        self.handle: Any = None

    def install(self) -> None:
        from torch.nn.modules.module import register_module_forward_pre_hook

        if self.handle is None:
            self.handle = register_module_forward_pre_hook(self)

    def built(self, module: Any) -> None:
        """``Module.__init__`` ran: the hook is needed until ``module`` is called."""
        with _lock:
            if module not in self.known:
                self.pending.add(module)
                self.install()

    def __call__(self, module: Any, _inputs: Any) -> None:
        if module in self.known:
            return
        with _lock:
            if module in self.known:
                return
            root, method = _outermost(module, sys._getframe(1))
            name = type(root).__name__
            # A component met now is marked; so is one whose work began in a method of its
            # own (wrapped from now on). A module met inside a known component's forward is
            # only learnt: that forward's hook marked the component.
            newly = root not in self.known
            by_method = method not in _CALLING
            if newly:
                _hook(root, name, ("encode", "decode"))
                self.learn(root)
            if by_method:
                _wrap_method(type(root), method)
            self.learn(module)
            if not len(self.pending) and self.handle is not None:
                self.handle.remove()
                self.handle = None
        if newly or by_method:
            _enter(f"{_names.get(root) or name}.{method}" if by_method else name)

    def learn(self, module: Any) -> None:
        for inner in _inside(module):
            self.known.add(inner)
            self.pending.discard(inner)


def _inside(module: Any) -> Iterator[Any]:
    """``module`` and every module under it, by identity (``Module.modules()`` hashes each,
    which a module of a class that defines ``__eq__`` alone cannot be)."""
    seen = _Ids()
    stack = [module]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        stack.extend(c for c in vars(current).get("_modules", {}).values() if c is not None)


def _outermost(module: Any, frame: Any) -> tuple[Any, str]:
    """The outermost module whose code is running at ``frame`` (``module`` itself when no
    other is), and the outermost of its methods running there (a wrapper a library put
    around one, such as diffusers' ``apply_forward_hook``, is not a method of its class and
    is passed over); ``_call_impl`` when only its call is. A module whose ``__init__`` has
    not reached ``Module.__init__`` yet is not one."""
    import torch

    root, method = module, "_call_impl"
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module) and "_forward_pre_hooks" in vars(owner):
            if owner is not root:
                root, method = owner, "_call_impl"
            name = frame.f_code.co_name
            static = inspect.getattr_static(type(owner), name, None)
            if name in _CALLING or isinstance(static, types.FunctionType):
                method = name
        frame = frame.f_back
    return root, method


_calls: list[_Calls] = []


def watch_calls() -> bool:
    """Marks a stage whenever a top-level module starts its work, named after its class (see
    the module docs). False (nothing done) without torch."""
    try:
        import torch
    except ImportError:
        return False
    if not _calls:
        calls = _Calls()
        _calls.append(calls)
        original = torch.nn.Module.__init__

        @functools.wraps(original)
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            calls.built(self)

        torch.nn.Module.__init__ = init
        calls.install()
    return True

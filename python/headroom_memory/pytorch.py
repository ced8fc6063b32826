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
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

from ._stages import last_marked, mark

_state = threading.local()
_lock = threading.Lock()

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


def _hook(module: Any, name: str, methods: tuple[str, ...]) -> None:
    """A forward pre-hook marking ``name``, and ``name.method`` around each of ``methods``."""
    if getattr(module, "_headroom_watched", False):
        return
    module.register_forward_pre_hook(functools.partial(_pre_hook, name))
    for method in methods:
        _wrap_method(module, name, method)
    module._headroom_watched = True


def _wrap_method(module: Any, name: str, method: str) -> None:
    """``module.method`` marks ``name.method`` when called (once: a wrapper is not wrapped)."""
    original = getattr(module, method, None)
    if callable(original) and method not in vars(module):
        setattr(module, method, _wrapped(f"{name}.{method}", original))


def _pre_hook(name: str, _module: Any, _inputs: Any) -> None:
    # A component's own method under way (its decode calling its forward) keeps its name.
    if not getattr(_state, "inside", 0):
        _enter(name)


def _wrapped(name: str, original: Any) -> Any:
    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        _enter(name)
        _state.inside = getattr(_state, "inside", 0) + 1
        try:
            return original(*args, **kwargs)
        finally:
            _state.inside -= 1

    return call


class _Calls:
    """The no-code path (:func:`watch_calls`): which modules are known, which were built and
    not yet called, and the global hook while any such module is left."""

    def __init__(self) -> None:
        self.known: weakref.WeakSet[Any] = weakref.WeakSet()
        self.pending: weakref.WeakSet[Any] = weakref.WeakSet()
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
                _hook(root, name, ())
                self.learn(root)
            if by_method:
                _wrap_method(root, name, method)
            self.learn(module)
            if not self.pending and self.handle is not None:
                self.handle.remove()
                self.handle = None
        if newly or by_method:
            _enter(f"{name}.{method}" if by_method else name)

    def learn(self, module: Any) -> None:
        for inner in module.modules():
            self.known.add(inner)
            self.pending.discard(inner)


def _outermost(module: Any, frame: Any) -> tuple[Any, str]:
    """The outermost module whose code is running at ``frame`` (``module`` itself when no
    other is), and the name of the function it runs there."""
    import torch

    root, method = module, "_call_impl"
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module):
            root, method = owner, frame.f_code.co_name
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

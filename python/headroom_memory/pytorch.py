"""Automatic stages for PyTorch: a stage per top-level component, with no marks in the code.

:func:`watch_modules` takes a diffusers pipeline (anything with a ``components`` mapping), a
``torch.nn.Module`` (its direct children are the components), or any object whose attributes
hold modules. Each component gets one forward pre-hook, and its ``encode``/``decode``
methods (a VAE's, which pipelines call instead of ``forward``) a thin wrapper; each marks the
component's name (``vae.decode``) when it starts, unless that stage is already the current
one, so a denoising loop that calls the transformer fifty times marks it once. Nothing is
hooked below the top level: a forward pass pays one Python call per component call.

:func:`watch_calls` is the no-code-change path (``python -m headroom_memory gen.py``): one
global forward pre-hook that marks any module called while no other watched module runs, by
its class name; the modules below it are recognised by identity and skipped. It costs one
Python call per module call, so :func:`watch_modules` is the lighter of the two.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from typing import Any

from ._stages import mark

_state = threading.local()
_lock = threading.Lock()
_current: list[str] = [""]  # the last stage this module marked


def _enter(name: str) -> None:
    """Marks ``name`` unless it is already the stage this module marked last."""
    if _current[0] == name:
        return
    _current[0] = name
    mark(name)


def components(obj: Any) -> Iterator[tuple[str, Any]]:
    """The top-level components of ``obj``: (name, module) pairs."""
    import torch

    found = getattr(obj, "components", None)
    if isinstance(found, dict):
        items = list(found.items())
    elif isinstance(obj, torch.nn.Module):
        items = list(obj.named_children())
    else:
        items = list(vars(obj).items())
    for name, value in items:
        if isinstance(value, torch.nn.Module) and not name.startswith("_"):
            yield name, value


def watch_modules(pipeline_or_module: Any) -> Any:
    """Hooks every top-level component of ``pipeline_or_module`` (see the module docs);
    returns it. Hooking the same object twice hooks nothing more."""
    for name, module in components(pipeline_or_module):
        if getattr(module, "_headroom_watched", False):
            continue
        module.register_forward_pre_hook(functools.partial(_pre_hook, name))
        for method in ("encode", "decode"):
            original = getattr(module, method, None)
            if callable(original):
                setattr(module, method, _wrapped(f"{name}.{method}", original))
        module._headroom_watched = True
    return pipeline_or_module


def _pre_hook(name: str, _module: Any, _inputs: Any) -> None:
    _enter(name)


def _wrapped(name: str, original: Any) -> Any:
    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        _enter(name)
        return original(*args, **kwargs)

    return call


class _Calls:
    """The global hook of :func:`watch_calls`: which modules are inside a watched one."""

    def __init__(self) -> None:
        self.inner: set[int] = set()
        self.top: set[int] = set()

    def __call__(self, module: Any, _inputs: Any) -> None:
        key = id(module)
        if key in self.inner:
            return
        if key not in self.top:
            with _lock:
                self.top.add(key)
                self.inner.update(id(m) for m in module.modules() if m is not module)
        _enter(type(module).__name__)


_installed: list[Any] = []


def watch_calls() -> bool:
    """Marks a stage, named after its class, whenever a module is called that no other
    called module contains (see the module docs). False (nothing done) without torch."""
    try:
        from torch.nn.modules.module import register_module_forward_pre_hook
    except ImportError:
        return False
    if not _installed:
        _installed.append(register_module_forward_pre_hook(_Calls()))
    return True

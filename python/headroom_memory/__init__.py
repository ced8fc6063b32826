"""Headroom from Python: stage marks, automatic stages for PyTorch and stageload, "will it
fit?" before loading, the guard's warning, pause and stop heard by the job, and a run's
verdict and a key's history as dataclasses.

    from headroom_memory import stage, mark, fits, on_warning, on_stop, history

    with stage("decode"):          # or @stage("decode"), or mark("decode")
        image = vae.decode(latents)

Run the job under ``headroom guard -- python gen.py`` (the ``headroom`` command comes with
this package). Outside any guard every call does nothing, silently; a mark never raises.
``watch_modules(pipeline)`` (PyTorch) and ``python -m headroom_memory gen.py`` (no code
change) mark a stage per top-level component; ``headroom_memory.stageload.GuardSink`` passes
a stageload pipeline's events to the guard. ``with guard(swap_budget="8G"):`` (or
``@guard("8G")``, or ``%%guard 8G`` in Jupyter after ``%load_ext headroom_memory``) guards
the running process itself, interrupting it at its budget (``KeyboardInterrupt``); its
``verdict`` says what the block did. ``on_pause`` and ``on_stop`` hear a pause and a stop
(``on_stop`` runs in the main thread within the stop's grace); ``history(key)`` lists a
key's past runs. See docs/python.md.
"""

from __future__ import annotations

from typing import Any

from ._binary import DISTRIBUTION, binary_path
from ._errors import HeadroomError, HeadroomWarning
from ._fit import Fit, fits
from ._guard import Guard, guard, load_ipython_extension
from ._stages import current_stage, end_stage, mark, report, stage
from ._version import version as _installed_version
from ._callbacks import GuardPause, GuardStop, GuardWarning, on_pause, on_stop, on_warning
from ._results import Run, StageGrowth, Verdict, history

#: This package's version (the installed distribution's; run from a checkout, the Cargo
#: workspace's, which the wheel takes).
__version__: str = _installed_version()

__all__ = [
    "DISTRIBUTION",
    "Fit",
    "Guard",
    "GuardPause",
    "GuardStop",
    "GuardWarning",
    "HeadroomError",
    "HeadroomWarning",
    "Run",
    "StageGrowth",
    "Verdict",
    "binary_path",
    "current_stage",
    "end_stage",
    "fits",
    "guard",
    "history",
    "load_ipython_extension",
    "mark",
    "on_pause",
    "on_stop",
    "on_warning",
    "report",
    "stage",
    "watch_modules",
]


def watch_modules(pipeline_or_module: Any) -> Any:
    """Marks a stage whenever a top-level component of a PyTorch model or a diffusers
    pipeline starts its work (see :mod:`headroom_memory.pytorch`); returns its argument."""
    from .pytorch import watch_modules as watch

    return watch(pipeline_or_module)

"""Headroom from Python: stage marks, automatic stages for PyTorch and stageload, "will it
fit?" before loading, and the guard's warning heard by the job.

    from headroom_memory import stage, mark, fits, on_warning

    with stage("decode"):          # or @stage("decode"), or mark("decode")
        image = vae.decode(latents)

Run the job under ``headroom guard -- python gen.py`` (the ``headroom`` command comes with
this package). Outside any guard every call does nothing, silently; a mark never raises.
``watch_modules(pipeline)`` (PyTorch) and ``python -m headroom_memory gen.py`` (no code
change) mark a stage per top-level component; ``headroom_memory.stageload.GuardSink`` passes
a stageload pipeline's events to the guard. See docs/python.md.
"""

from __future__ import annotations

from typing import Any

from ._binary import DISTRIBUTION, binary_path
from ._errors import HeadroomError, HeadroomWarning
from ._fit import Fit, fits
from ._stages import current_stage, mark, report, stage
from ._warning import GuardWarning, on_warning

__all__ = [
    "DISTRIBUTION",
    "Fit",
    "GuardWarning",
    "HeadroomError",
    "HeadroomWarning",
    "binary_path",
    "current_stage",
    "fits",
    "mark",
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

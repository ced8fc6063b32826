"""A stageload ``EventSink`` that passes a pipeline's events to the guard.

    from stageload import StagedModels
    from headroom_memory.stageload import GuardSink

    models = StagedModels(loaders, stages=stages, events=GuardSink())

stageload's ``stage`` event becomes a stage mark (the verdict names the stage that grew
swap); ``load``, ``reload``, ``release`` and ``mark`` go to the job's trace as stageload
writes them (``kind``, ``name``, ``stage``, ``nbytes``, ``seconds``, ``note``). Another
sink (stageload's ``MemoryMeter``, a ``ListSink``) still gets every event when passed as
``forward_to``. Outside any guard the events are only forwarded; the sink never raises.
stageload need not be importable for this module: events are read by their attributes.
"""

from __future__ import annotations

from typing import Any

from ._stages import mark, report


class GuardSink:
    """A stageload ``EventSink``: each event to the guard, then to ``forward_to``."""

    def __init__(self, forward_to: Any = None) -> None:
        self.forward_to = forward_to

    def emit(self, event: Any) -> None:
        """Takes one stageload ``Event``."""
        kind = getattr(event, "kind", None)
        if kind == "stage":
            stage = getattr(event, "stage", None)
            if stage:
                mark(stage)
        elif kind in ("load", "reload", "release", "mark"):
            report(
                kind,
                getattr(event, "name", None),
                stage=getattr(event, "stage", None),
                nbytes=getattr(event, "nbytes", None),
                seconds=getattr(event, "seconds", None),
                note=getattr(event, "note", None),
            )
        if self.forward_to is not None:
            self.forward_to.emit(event)

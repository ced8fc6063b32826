"""A stageload pipeline (the real package: StagedModels) whose models allocate real memory
when loaded: `encoder` 50 MiB, `decoder` 400 MiB, one stage each; its events go to the guard
through GuardSink, and to a stageload ListSink beside it. No mark anywhere else."""

import json
import sys
import time

import torch
from stageload import ListSink, StagedModels

from headroom_memory.stageload import GuardSink
from say import say  # one write per line: the guard writes to the same stderr

MIB = 1 << 20

if not hasattr(torch.Tensor, "untyped_storage"):
    # Debian 12's CPU torch is 1.13 (PyPI's Linux torch wheels pull CUDA); stageload counts
    # bytes with Tensor.untyped_storage() of torch 2.0. 1.13 has the same storage through
    # storage().untyped(): given its 2.0 name, nothing else of stageload is changed.
    torch.Tensor.untyped_storage = lambda self: self.storage().untyped()


def model(mib):
    def load():
        m = torch.nn.Module()
        m.weight = torch.nn.Parameter(torch.ones(mib * MIB // 4), requires_grad=False)
        return m

    return load


kept = ListSink()
models = StagedModels(
    {"encoder": model(50), "decoder": model(400)},
    stages={"encode": ["encoder"], "decode": ["decoder"]},
    events=GuardSink(forward_to=kept),
)
models.enter("encode")
models["encoder"]
time.sleep(1.0)
models.enter("decode")
models["decoder"]
time.sleep(1.5)
models.close()
say("RESULT", json.dumps([e.kind for e in kept.events]))

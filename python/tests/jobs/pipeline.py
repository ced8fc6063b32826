"""A pipeline of three PyTorch components, each allocating (and holding) memory in its
forward pass: text_encoder 50 MiB, transformer 100 MiB, vae 400 MiB, as the Python side of a
diffusers pipeline calls its components. No mark anywhere; with --watch it calls
`watch_modules(pipeline)`, else it is the no-code-change path's script
(`python -m headroom_memory pipeline.py`). --hold SECONDS after each component."""

import sys
import time

import torch

MIB = 1 << 20
HOLD = float(sys.argv[sys.argv.index("--hold") + 1]) if "--hold" in sys.argv else 1.0


class Component(torch.nn.Module):
    def __init__(self, mib: int) -> None:
        super().__init__()
        self.mib = mib
        self.proj = torch.nn.Linear(8, 8)
        self.held: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.held.append(torch.ones(self.mib * MIB // 4))  # float32, every page written
        time.sleep(HOLD)
        return self.proj(x)


class TextEncoder(Component):
    pass


class Denoiser(Component):
    pass


class Decoder(Component):
    pass


class Pipeline:
    def __init__(self) -> None:
        self.text_encoder = TextEncoder(50)
        self.transformer = Denoiser(100)
        self.vae = Decoder(400)

    def __call__(self) -> torch.Tensor:
        x = torch.zeros(1, 8)
        return self.vae(self.transformer(self.text_encoder(x)))


pipe = Pipeline()
if "--watch" in sys.argv:
    from headroom_memory import watch_modules

    watch_modules(pipe)
pipe()
print("pipeline: done", file=sys.stderr)

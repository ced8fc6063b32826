"""What automatic stages name, in one of three scenarios (argv[1]); no memory to speak of.

- ``mixed``: ``watch_modules`` on a pipeline, the user's own marks between its calls:
  encoder, mark("user"), encoder again, decoder.
- ``modulelist``: ``watch_modules`` on a module whose children are a ``ModuleList`` of
  blocks and a head; the forward iterates the blocks, as transformers do.
- ``decode``: no hook set here (run under ``python -m headroom_memory``): a VAE-like module
  called through ``.decode()``, never through ``forward``, then a plain module; then a
  second pass of both. Prints whether the global hook was taken off after the first pass
  and put back when a new module was built.
"""

import sys

import torch

from headroom_memory import mark
from say import say


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class Stack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(3))
        self.head = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


class Vae(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.decoder = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)


class Pipe:
    def __init__(self) -> None:
        self.encoder = Block()
        self.decoder = Block()


def global_hooks() -> int:
    from torch.nn.modules import module

    return len(module._global_forward_pre_hooks)


x = torch.zeros(1, 4)
scenario = sys.argv[1]
if scenario == "mixed":
    from headroom_memory import watch_modules

    pipe = watch_modules(Pipe())
    pipe.encoder(x)
    mark("user")
    pipe.encoder(x)
    pipe.decoder(x)
elif scenario == "modulelist":
    from headroom_memory import watch_modules

    model = watch_modules(Stack())
    model(x)
    model.head(x)
    model(x)
elif scenario == "decode":
    vae, head = Vae(), Block()
    for _ in range(2):
        vae.decode(x)
        head(x)
    say("HOOKS after two passes", global_hooks())
    late = Block()
    say("HOOKS after a new module", global_hooks())
    late(x)
    say("HOOKS after its first call", global_hooks())

"""What automatic stages name, in one of three scenarios (argv[1]); no memory to speak of.

- ``mixed``: ``watch_modules`` on a pipeline, the user's own marks between its calls:
  encoder, mark("user"), encoder again, decoder.
- ``modulelist``: ``watch_modules`` on a module whose children are a ``ModuleList`` of
  blocks and a head; the forward iterates the blocks, as transformers do.
- ``decode``: no hook set here (run under ``python -m headroom_memory``): a VAE-like module
  called through ``.decode()``, never through ``forward``, then a plain module; then a
  second pass of both. Prints whether the global hook was taken off after the first pass
  and put back when a new module was built.
- ``library``: no hook set here either: an autoencoder whose ``encode`` and ``decode`` a
  library decorator wraps (as diffusers' ``apply_forward_hook`` does), encode first; a
  module whose ``__hash__`` fails until its ``__init__`` is done (as torchmetrics' metrics),
  one that is unhashable; then the autoencoder pickled and deep-copied, the copy's decode
  run on the copy's own weights (said as ``COPY ok``).
"""

import copy
import functools
import pickle
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


def apply_hook(method):
    """A library's decorator around a module's method (diffusers' ``apply_forward_hook``)."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        return method(self, *args, **kwargs)

    return wrapper


class Autoencoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = torch.nn.Linear(4, 4)
        self.decoder = torch.nn.Linear(4, 4)

    @apply_hook
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    @apply_hook
    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return self.decoder(z)


class Metric(torch.nn.Module):
    """Its hash reads what its ``__init__`` sets after ``Module.__init__``."""

    def __init__(self) -> None:
        super().__init__()
        self._defaults: dict[str, int] = {}

    def __hash__(self) -> int:
        return hash(tuple(self._defaults))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Unhashable(torch.nn.Module):
    def __eq__(self, other: object) -> bool:
        return self is other

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


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
elif scenario == "library":
    ae, metric, odd = Autoencoder(), Metric(), Unhashable()
    ae.encode(x)
    ae.decode(x)
    metric(x)
    odd(x)
    pickle.loads(pickle.dumps(ae))
    twin = copy.deepcopy(ae)
    with torch.no_grad():
        twin.decoder.weight.zero_()
        twin.decoder.bias.zero_()
    assert float(twin.decode(torch.ones(1, 4)).abs().sum()) == 0.0, "the copy ran the original"
    say("COPY", "ok")

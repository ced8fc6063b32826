#!/usr/bin/env python3
"""What headroom-memory costs a job: one mark (sent to a real guard over the job's
socket, protocol version 2), a mark outside any guard, and a forward pass of two PyTorch
models (tiny layers; a small transformer encoder) with and without automatic stages
(watch_modules: hooks on the top-level components only; watch_calls: the no-code-change
path, which takes its global hook off once it has found the components; and, for the
record, a global hook left on every module call, as that path did before).

Run with the installed package (a venv with the wheel, and torch for the forward passes):

    python python/bench/bench_marks.py            # re-runs itself under `headroom guard`

Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from headroom_memory import binary_path, mark


def per_call_us(f, n: int) -> tuple[float, float]:
    """Median and p95 of `n` calls of `f`, microseconds."""
    times = []
    for i in range(n):
        t0 = time.perf_counter_ns()
        f(i)
        times.append((time.perf_counter_ns() - t0) / 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def forward_ms(model, x, n: int) -> float:
    """Median time of one forward pass over `n`, milliseconds (after 20 warm-up passes)."""
    import torch

    with torch.no_grad():
        for _ in range(20):
            model(x)
        times = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            model(x)
            times.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(times)


def models():
    """Two models, each as a factory: one of tiny layers (where a hook per module call costs
    most) and a realistic one (a small transformer encoder), with an input for each."""
    import torch

    class Tiny(torch.nn.Module):
        """200 Linear(8, 8) + ReLU pairs in 4 ModuleList blocks: 405 modules of almost no
        arithmetic each, batch 1."""

        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList(
                torch.nn.Sequential(*[m for _ in range(50)
                                      for m in (torch.nn.Linear(8, 8), torch.nn.ReLU())])
                for _ in range(4))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    def encoder() -> torch.nn.Module:
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                 batch_first=True)
        return torch.nn.TransformerEncoder(layer, num_layers=4)

    return [
        ("tiny layers: 4×50 Linear(8, 8)+ReLU, 405 modules, batch 1", Tiny,
         torch.randn(1, 8)),
        ("realistic: TransformerEncoder, 4 layers, d_model 256, 64 tokens", encoder,
         torch.randn(1, 64, 256)),
    ]


def forwards() -> list[str]:
    try:
        import torch
    except ImportError:
        return ["| forward pass | (torch not installed) | | |"]
    from headroom_memory import pytorch

    torch.set_num_threads(1)
    from torch.nn.modules.module import register_module_forward_pre_hook

    class Pipe:
        pass

    rows = []
    base = {}
    for label, build, x in models():
        base[label] = forward_ms(build(), x, 200)
        rows.append(f"| forward pass, {label}, no hooks | {base[label]:.3f} ms | | |")
        pipe = Pipe()
        pipe.model = build()
        pytorch.watch_modules(pipe)
        t = forward_ms(pipe.model, x, 200)
        rows.append(f"| same, `watch_modules` (a hook on the component) | {t:.3f} ms | "
                    f"{100 * (t - base[label]) / base[label]:+.1f} % | |")
        # What the no-code path cost before it took its global hook off: a global pre-hook
        # that every module call passes.
        handle = register_module_forward_pre_hook(lambda module, inputs: None)
        t = forward_ms(build(), x, 200)
        handle.remove()
        rows.append(f"| same, a global pre-hook on every module call (the no-code path "
                    f"before 2026-12-07) | {t:.3f} ms | "
                    f"{100 * (t - base[label]) / base[label]:+.1f} % | |")
    pytorch.watch_calls()
    for label, build, x in models():
        t = forward_ms(build(), x, 200)
        rows.append(f"| {label}, `python -m headroom_memory` (hooks on the components found) "
                    f"| {t:.3f} ms | {100 * (t - base[label]) / base[label]:+.1f} % | |")
    return rows


def main() -> None:
    if not os.environ.get("HEADROOM_MARK"):
        outside = per_call_us(lambda i: mark(f"s{i}"), 2000)
        env = {**os.environ, "HEADROOM_BENCH_OUTSIDE": f"{outside[0]:.2f},{outside[1]:.2f}"}
        sys.exit(subprocess.run([str(binary_path()), "guard", "--wait-free", "0", "--no-history",
                                 "--", sys.executable, __file__], env=env).returncode)
    med, p95 = per_call_us(lambda i: mark(f"stage-{i}"), 200)
    out_med, out_p95 = os.environ.get("HEADROOM_BENCH_OUTSIDE", "0,0").split(",")
    print("| what | median | p95 / overhead | |")
    print("|---|---|---|---|")
    print(f"| mark() under `headroom guard` (sent, its answer not waited for; 200 marks) | {med:.0f} µs | {p95:.0f} µs | |")
    print(f"| mark() outside any guard | {float(out_med):.2f} µs | {float(out_p95):.2f} µs | |")
    for row in forwards():
        print(row)


if __name__ == "__main__":
    main()

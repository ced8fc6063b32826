#!/usr/bin/env python3
"""What headroom-memory costs a job: one mark (sent to a real guard over the job's
socket, protocol version 2), a mark outside any guard, and a forward pass of a PyTorch
model with and without automatic stages (watch_modules: hooks on the top-level components
only; watch_calls: the no-code-change path's global hook).

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


def forwards() -> list[str]:
    try:
        import torch
    except ImportError:
        return ["| forward pass | (torch not installed) | | |"]
    from headroom_memory import pytorch

    torch.set_num_threads(1)

    def component() -> torch.nn.Module:
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    class Denoiser(torch.nn.Module):
        """A transformer-sized stand-in called once per step, as a denoising loop does."""

        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList(component() for _ in range(4))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    x = torch.randn(16, 256)
    rows = []
    plain = Denoiser()
    base = forward_ms(plain, x, 300)
    rows.append(f"| forward pass, 4×8 Linear(256) (65 modules), no hooks | {base:.3f} ms | | |")

    class Pipe:
        pass

    pipe = Pipe()
    pipe.transformer = Denoiser()
    pytorch.watch_modules(pipe)
    watched = forward_ms(pipe.transformer, x, 300)
    rows.append(f"| same, watch_modules (1 hook: the top-level component) | {watched:.3f} ms | "
                f"{100 * (watched - base) / base:+.1f} % | |")
    pytorch.watch_calls()
    globally = forward_ms(Denoiser(), x, 300)
    rows.append(f"| same, python -m headroom_memory (global pre-hook) | {globally:.3f} ms | "
                f"{100 * (globally - base) / base:+.1f} % | |")
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

"""The block trainer on CUDA against the CPU: time per block, and whether a network's result is
bitwise the same alone and in a block, and from run to run, on the GPU (the CPU's guarantee,
tests/method/test_training.py).

Run on a machine with a GPU, from the repository root: python -m benchmarks.gpu_training
It needs only numpy and torch. Times are the best of `REPEATS` runs after one untimed warm-up.
"""

import os
import time

import numpy as np
import torch

from expril.method import mlp
from expril.method.training import train_mlps

EPOCHS, BATCH, REPEATS = 10, 64, 1
# (name, hidden, n, d): A's and B's h* network on B's sizes, C-E's on E's.
CASES = [("B-like", [16, 256, 256, 16], 2500, 4), ("E-like", [32, 32], 5000, 25)]
BLOCKS = (20, 100)


def data(blocks, n, d):
    r = np.random.default_rng(0)
    x = r.normal(size=(blocks, n, d))
    y = (x[..., 0] + r.normal(size=(blocks, n)) > 0).astype(int)
    return x, y, np.ones((blocks, n))


def train(x, y, w, hidden, device, threads, seeds=None):
    seeds = list(range(len(x))) if seeds is None else seeds
    return train_mlps(x, y, w, hidden, seeds, EPOCHS, BATCH, 1e-3, device=device, threads=threads)


def best_time(run):
    run()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def same(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a if isinstance(a[k], np.ndarray))


def main():
    cores = os.cpu_count()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"torch {torch.__version__}, GPU: {gpu}, {cores} CPU cores; {EPOCHS} epochs, batch {BATCH}")
    print("| case | hidden | networks | CPU 1 thread (s) | CPU all cores (s) | CUDA (s) | CPU 1 / CUDA |")
    print("|---|---|---|---|---|---|---|")
    checks = []
    for name, hidden, n, d in CASES:
        for blocks in BLOCKS:
            x, y, w = data(blocks, n, d)
            one = best_time(lambda: train(x, y, w, hidden, "cpu", 1))  # noqa: B023 (called at once)
            many = best_time(lambda: train(x, y, w, hidden, "cpu", cores))  # noqa: B023
            cuda = best_time(lambda: train(x, y, w, hidden, "cuda", 1))  # noqa: B023
            print(f"| {name} | {hidden} | {blocks} | {one:.2f} | {many:.2f} | {cuda:.2f} | {one / cuda:.1f}x |")
        x, y, w = data(BLOCKS[0], n, d)
        block, again = (train(x, y, w, hidden, "cuda", 1) for _ in range(2))
        alone = train(x[3:4], y[3:4], w[3:4], hidden, "cuda", 1, seeds=[3])
        on_cpu = train(x, y, w, hidden, "cpu", 1)
        logits = mlp.logits(block, x), mlp.logits(on_cpu, x)
        checks.append(
            (
                name,
                same(block, again),
                same(mlp.select(block, [3]), alone),
                float(np.abs(logits[0] - logits[1]).max()),
                float((np.sign(logits[0]) == np.sign(logits[1])).mean()),
            )
        )
    print()
    print("| case | CUDA run to run bitwise | net 3 alone = in a block of 20 | max logit CPU-CUDA | same predictions |")
    print("|---|---|---|---|---|")
    for name, rerun, alone, gap, agree in checks:
        print(f"| {name} | {rerun} | {alone} | {gap:.2e} | {agree:.4f} |")


if __name__ == "__main__":
    main()

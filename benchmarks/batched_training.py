"""Time training 8 networks one at a time (B = 1, 8 calls) against one batched call (B = 8).

Run from the repository root: .venv/bin/python -m benchmarks.batched_training
Times are the best of `REPEATS` runs (other jobs on the machine only ever slow a run down),
after one untimed warm-up call per architecture.
"""

import time

import numpy as np

from expril.method.training import train_mlps

NETWORKS, EPOCHS, BATCH, REPEATS = 8, 5, 64, 3
CASES = [([16, 256, 256, 16], 2500, 4), ([32, 32], 5000, 25)]


def data(n, d):
    r = np.random.default_rng(0)
    x = r.normal(size=(NETWORKS, n, d))
    y = (x[..., 0] + r.normal(size=(NETWORKS, n)) > 0).astype(int)
    return x, y, np.ones((NETWORKS, n))


def seconds(run):
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def one_at_a_time(x, y, w, hidden, threads):
    for b in range(len(x)):
        train_mlps(x[b : b + 1], y[b : b + 1], w[b : b + 1], hidden, [b], EPOCHS, BATCH, 1e-3, threads=threads)


def batched(x, y, w, hidden, threads):
    train_mlps(x, y, w, hidden, list(range(NETWORKS)), EPOCHS, BATCH, 1e-3, threads=threads)


def main():
    print(f"{NETWORKS} networks, {EPOCHS} epochs, batch {BATCH}, best of {REPEATS}")
    print(
        f"{'hidden':18s} {'n':>5s} {'d':>3s} {'threads':>7s} {'B=1 x8 (s)':>10s} "
        f"{'B=8 (s)':>8s} {'per net B=1':>11s} {'per net B=8':>11s} {'ratio':>6s}"
    )
    for hidden, n, d in CASES:
        x, y, w = data(n, d)
        one_at_a_time(x[:1], y[:1], w[:1], hidden, 1)  # warm-up
        for threads in (1, 2):
            single = seconds(lambda: one_at_a_time(x, y, w, hidden, threads))  # noqa: B023 (called at once)
            block = seconds(lambda: batched(x, y, w, hidden, threads))  # noqa: B023
            print(
                f"{str(hidden):18s} {n:5d} {d:3d} {threads:7d} {single:10.2f} {block:8.2f} "
                f"{single / NETWORKS:11.3f} {block / NETWORKS:11.3f} {single / block:6.2f}"
            )


if __name__ == "__main__":
    main()

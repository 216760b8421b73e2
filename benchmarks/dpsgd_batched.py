"""DP-SGD on a block of 20 networks: one at a time through Opacus's PrivacyEngine.make_private
(tests/opacus_reference.py) against all at once (expril.rivals.dpsgd.train), on one thread.

Run from the repository root: .venv/bin/python -m benchmarks.dpsgd_batched [--opacus K] [--profile]
Each network has its own synthetic data (n = 1000 training and 1000 test samples, d = 25
standard normal features, labels drawn from a logistic model of its own). Opacus trains the
first K networks (timed; the block's time is extrapolated to 20), the batched trainer all 20
with the same seeds, so its first K networks are Opacus's up to float rounding: the table shows
the largest weight difference and the mean test accuracies of both.
--profile adds, for each case, where the batched trainer spends its time (torch.profiler's top ops).
"""

import argparse
import math
import os
import time
import warnings

import numpy as np
import torch

from expril import settings
from expril.privacy.dpsgd import DPSGD
from expril.rivals import dpsgd
from tests.opacus_reference import train_one

NETWORKS, N, D, EPOCHS, LR, EPS, DELTA, CLIP = 20, 1000, 25, 10, 1e-2, 1.0, 1e-5, 1.0
CASES = [([32], "tanh"), ([16, 256, 256, 16], "relu")]
BATCHES = [256, 64]


def data():
    """Training and test inputs (B, N, D) and labels (B, N) of logistic models, one per network."""
    r = np.random.default_rng(0)
    x = r.normal(size=(2, NETWORKS, N, D)).astype(np.float32)
    beta = r.normal(size=(NETWORKS, D)) * 3 / math.sqrt(D)
    y = (r.random(size=(2, NETWORKS, N)) < 1 / (1 + np.exp(-np.einsum("sbnd,bd->sbn", x, beta)))).astype(np.int8)
    return x[0], y[0], x[1], y[1]


def accuracy(layers, activation, x, y):
    """Test accuracy of each network; layers = [W0, b0, ...] stacked (B, ...)."""
    h = torch.as_tensor(x)
    pairs = [(torch.as_tensor(w), torch.as_tensor(b)) for w, b in zip(layers[::2], layers[1::2])]
    for w, b in pairs[:-1]:
        h = getattr(torch, activation)(torch.bmm(h, w) + b[:, None, :])
    logits = torch.bmm(h, pairs[-1][0])[..., 0] + pairs[-1][1]
    return ((logits >= 0).numpy() == y).mean(axis=1)


def opacus(x, y, hidden, activation, batch, plan, k):
    """The first k networks trained one after the other through Opacus; their stacked layers."""
    nets = [train_one(x[b], y[b], hidden, LR, batch, plan, b, 100 + b, 200 + b, activation) for b in range(k)]
    return [np.stack(arrays) for arrays in zip(*nets)]


def batched(x, y, hidden, activation, plan):
    model, _ = dpsgd.train(
        x,
        y,
        hidden,
        records=x.shape[1],
        sample_rate=plan.sample_rate,
        epochs=plan.epochs,
        lr=LR,
        max_grad_norm=plan.max_grad_norm,
        noise_multiplier=plan.noise_multiplier,
        init_seeds=range(len(x)),
        sampling_seeds=range(100, 100 + len(x)),
        noise_seeds=range(200, 200 + len(x)),
        activation=activation,
    )
    return list(model.values())


def timed(run, *args):
    """run(*args)'s result, wall time and CPU time (the latter less sensitive to other jobs on the machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = run(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _pair(values, unit):
    return f"{values[0]:.2f}{unit} ({values[1]:.2f}{unit})"


def report(k=4, profile=False):
    """The comparison as Markdown lines, one table row per case (printed as it is measured)."""
    warnings.filterwarnings("ignore")  # Opacus's warnings on secure mode and the optimiser
    torch.set_num_threads(1)
    x, y, x_test, y_test = data()
    yield (
        f"{NETWORKS} networks, n = {N}, d = {D}, {EPOCHS} epochs, Adam lr {LR}, ε {EPS}, δ {DELTA}, C {CLIP}, one "
        f"thread; Opacus trains {k} networks, its time per network × 20 is its block's; times: wall (CPU); "
        f"accuracies on fresh test records: mean over the first {k} networks (Opacus, batched) and over all 20; "
        f"load average {os.getloadavg()[0]:.1f} at the start.\n"
    )
    yield (
        "| hidden | activation | batch | steps | Opacus per network | Opacus × 20 | batched, 20 | speed-up | "
        "max \\|ΔW\\| | accuracy Opacus / batched | batched, all 20 |"
    )
    yield "|---|---|---|---|---|---|---|---|---|---|---|"
    for hidden, activation in CASES:
        for batch in BATCHES:
            plan = DPSGD(EPS, DELTA, settings.sample_rate(N, batch), EPOCHS, CLIP)
            _ = plan.noise_multiplier  # calibrated outside the timings
            warm_up = DPSGD(EPS, DELTA, plan.sample_rate, 1, CLIP)
            opacus(x, y, hidden, activation, batch, warm_up, 1)
            batched(x[:1], y[:1], hidden, activation, warm_up)
            ref, *t_opacus = timed(opacus, x, y, hidden, activation, batch, plan, k)
            layers, *t_batched = timed(batched, x, y, hidden, activation, plan)
            diff = max(np.abs(a - b[:k]).max() for a, b in zip(ref, layers))
            acc_ref, acc = (
                accuracy(nets, activation, x_test[: len(nets[0])], y_test[: len(nets[0])]) for nets in (ref, layers)
            )
            per_net = [t / k for t in t_opacus]
            yield (
                f"| {hidden} | {activation} | {batch} | {plan.steps} | {_pair(per_net, ' s')} | "
                f"{_pair([t * NETWORKS for t in per_net], ' s')} | {_pair(t_batched, ' s')} | "
                f"{_pair([t * NETWORKS / u for t, u in zip(per_net, t_batched)], 'x')} | {diff:.1e} | "
                f"{acc_ref.mean():.4f} / {acc[:k].mean():.4f} | {acc.mean():.4f} |"
            )
            if profile:
                with torch.profiler.profile() as prof:
                    batched(x, y, hidden, activation, plan)
                yield prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=6)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--opacus", type=int, default=4, help="networks trained through Opacus (timed, extrapolated)")
    parser.add_argument("--profile", action="store_true", help="the batched trainer's top ops per case")
    args = parser.parse_args()
    for line in report(args.opacus, args.profile):
        print(line, flush=True)


if __name__ == "__main__":
    main()

"""DP-MERF's generator training with autograd's gradient of the mean features against the one
that reuses the forward pass's cos and sin (expril.rivals.generator.mean_features), in one process,
on the shapes of the study's settings (config.yaml's generator and config/tuning.yaml's
`official-wide`, D's 15 features), blocks of 20 (reported runs) and 5 (calibration).

    .venv/bin/python -m benchmarks.dpmerf_gradient [--steps 100] [--repeats 2]

One thread; CPU time (`time.process_time`) of `train_generators` for `steps` Adam steps (a run's
time is linear in them), the two arms alternated `repeats` times; the last column checks that
both train the same generators, bit for bit (RESULTS.md (q)).
"""

import argparse
import time

import numpy as np
import torch

from expril.method import rff
from expril.rivals import dpmerf, generator

D_FEATURES = 15
# name: (networks, random features D, hidden widths, noise_dim, codes per class, balanced)
CASES = {
    "configured, block of 20": (20, 1000, [64, 64], 16, 256, False),
    "configured, block of 5": (5, 1000, [64, 64], 16, 256, False),
    "official-wide, block of 20": (20, 10000, [4 * D_FEATURES, 2 * D_FEATURES], 10, 128, True),
    "official-wide, block of 5": (5, 10000, [4 * D_FEATURES, 2 * D_FEATURES], 10, 128, True),
}


def autograd_mean_features(feature_map, x):
    """The mean features as autograd differentiates them, through cos, sin and means."""
    z = rff.projection(feature_map, x)
    return torch.cat([z.cos().mean(dim=-2), z.sin().mean(dim=-2)], dim=-1) * rff.amplitude(z)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    reused = generator.mean_features
    arms = {"autograd": autograd_mean_features, "reused cos and sin": reused}
    g = np.random.default_rng(0)
    print("| case | autograd (s) | reused cos and sin (s) | ratio | same generators |")
    print("|---|---|---|---|---|")
    for case, (networks, features, hidden, noise_dim, codes, balanced) in CASES.items():
        x, y = g.normal(size=(700, D_FEATURES)), g.integers(0, 2, 700)
        maps = rff.stack([rff.make_map(x, features, g) for _ in range(networks)])
        released = np.stack([dpmerf.embedding(rff.unstack(maps, b), x, y, 700) for b in range(networks)])
        seconds, models = {name: [] for name in arms}, {}
        for _ in range(args.repeats):
            for name, mean_features in arms.items():
                generator.mean_features = mean_features
                start = time.process_time()
                models[name], _ = generator.train_generators(
                    released, maps, hidden, noise_dim, args.steps, codes, 1e-3, range(networks), balanced=balanced
                )
                seconds[name].append(time.process_time() - start)
        generator.mean_features = reused
        same = all(np.array_equal(models["autograd"][k], models["reused cos and sin"][k]) for k in models["autograd"])
        before, after = (min(seconds[name]) for name in arms)
        print(f"| {case} | {before:.2f} | {after:.2f} | {after / before:.2f} | {same} |")


if __name__ == "__main__":
    main()

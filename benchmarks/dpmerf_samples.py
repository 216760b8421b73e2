"""How well DP-MERF's samples stand in for the curator's records: for each run of a comparison
study's seed block and each eps, a logistic regression trained on the samples and scored on the
real test split, the samples' own separability (5-fold), and their class-mean difference against
the real one (cosine, length ratio; features scaled by the real validation split's std).

    .venv/bin/python -m benchmarks.dpmerf_samples [results/extended] [CTG-A] [0-2] [1,inf]

Reads the study's files only (curator/ and learner/.../dpmerf/samples.npz): an evaluator's look,
never part of the workflow.
"""

import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.preprocessing import StandardScaler


def class_difference(x, y, scale):
    return (x[y == 1].mean(0) - x[y == 0].mean(0)) / scale


def main(results="results/extended", dataset="CTG-A", seeds="0-2", epsilons="1,inf"):
    curator = Path(results) / "curator" / dataset / seeds
    val, test = np.load(curator / "target_val.npz"), np.load(curator / "target_test.npz")
    print(
        "| seed | data | accuracy on the real test split | 5-fold accuracy on itself | class-mean cosine | "
        "class-mean length ratio |\n|---|---|---|---|---|---|"
    )
    for b, seed in enumerate(val["seeds"]):
        x, y = val["x"][b], val["y"][b]
        scaler, scale = StandardScaler().fit(x), x.std(0) + 1e-12
        real = class_difference(x, y, scale)
        sets = [("real validation split", x, y)]
        for eps in epsilons.split(","):
            samples = np.load(Path(results) / "learner" / dataset / seeds / f"eps{eps}" / "dpmerf" / "samples.npz")
            sets.append((f"samples, eps {eps}", samples["x"][b], samples["y"][b]))
        for name, xs, ys in sets:
            model = LogisticRegression(max_iter=5000)
            accuracy = model.fit(scaler.transform(xs), ys).score(scaler.transform(test["x"][b]), test["y"][b])
            own = cross_val_score(LogisticRegression(max_iter=5000), scaler.transform(xs), ys, cv=5).mean()
            diff = class_difference(xs, ys, scale)
            cosine = diff @ real / np.linalg.norm(diff) / np.linalg.norm(real)
            print(
                f"| {seed} | {name} | {accuracy:.3f} | {own:.3f} | {cosine:.2f} | "
                f"{np.linalg.norm(diff) / np.linalg.norm(real):.2f} |"
            )


if __name__ == "__main__":
    main(*sys.argv[1:])

"""The evaluator's steps: accuracies on the target's test split, the reference models h* and h0*,
and the identification's calibration (docs/identification.md)."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from expril.io import save_csv, save_npz
from expril.method import mlp
from expril.seeds import seed_int
from expril.steps.blocks import load_block, timed, train_networks
from expril.steps.curator import split_target
from expril.steps.world import generate_data


def _accuracy(model, data):
    return (mlp.predict(model, data["x"]) == data["y"]).mean(axis=1)


def _scores(model, data):
    """Per network: its accuracy, and the share of test records it labels 1 (a network that
    labels (nearly) every record alike has collapsed to one class, docs/comparison.md)."""
    predicted = mlp.predict(model, data["x"])
    return {"accuracy": (predicted == data["y"]).mean(axis=1), "positive_share": predicted.mean(axis=1)}


@timed
def evaluate_hypotheses(test_path, models, out_path, name, eps):
    """Accuracy of every h_t on the target test split; `models` maps (variant, t) to a model file."""
    test = load_block(test_path, ("x", "y"))
    frames = [
        pd.DataFrame(
            {"dataset": name, "seed": test["seeds"].astype(int), "eps": eps, "variant": variant, "t": t}
            | _scores(load_block(path, (), test["seeds"]), test)
        )
        for (variant, t), path in models.items()
    ]
    save_csv(out_path, pd.concat(frames, ignore_index=True))


@timed
def evaluate_stack(test_path, rivals, hypotheses, name):
    """The evaluations of several runs of one block in one job (the calibration's: rules/stacked.smk),
    each file the one its run's own job writes: `rivals` [{model, out, method, eps}] as
    evaluate_rival scores them, `hypotheses` [{models: [(variant, t, file)], out, eps}] as
    evaluate_hypotheses does."""
    for run in rivals:
        evaluate_rival(test_path, run["model"], run["out"], name, run["method"], run["eps"])
    for run in hypotheses:
        models = {(variant, t): path for variant, t, path in run["models"]}
        evaluate_hypotheses(test_path, models, run["out"], name, run["eps"])


@timed
def reference_models(val_path, test_path, out_csv, out_model, name, hidden, training, device, threads):
    """h*: the same architecture trained on the target validation split with its true labels;
    h0*: the validation split's majority class (a tie goes to 1), both scored on the test split."""
    val = load_block(val_path, ("x", "y"))
    test = load_block(test_path, ("x", "y"), val["seeds"])
    init_seeds = [seed_int("reference", name, int(s)) for s in val["seeds"]]
    model = train_networks(
        val["x"], val["y"], np.ones(val["y"].shape), {"hidden": hidden}, training, init_seeds, device, threads
    )
    save_npz(out_model, seeds=val["seeds"], **model)
    majority = (val["y"].mean(axis=1) >= 0.5).astype(np.int8)
    frame = pd.DataFrame(
        {
            "dataset": name,
            "seed": val["seeds"],
            "h_star": _accuracy(model, test),
            "h0_star": (test["y"] == majority[:, None]).mean(axis=1),
        }
    )
    save_csv(out_csv, frame)


@timed
def calibrate_reference(out_csv, name, spec, seeds, trainings, hidden, device, threads):
    """h* and h0* of benchmark `name` read as `spec` (with its redraw and val_fraction), on the
    calibration `seeds`, under each training reading ({label: training settings}): the steps
    above run into a scratch folder, of which only the accuracies are kept."""
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(out_csv).parent) as scratch:
        files = {part: Path(scratch) / f"{part}.npz" for part in ("source", "target", "val", "test")}
        generate_data(files["source"], files["target"], name, spec, seeds, spec["redraw"])
        split_target(files["target"], files["val"], files["test"], name, spec["val_fraction"])
        frames = []
        for label, training in trainings.items():
            accuracy = Path(scratch) / f"{label}.csv"
            reference_models(
                files["val"],
                files["test"],
                accuracy,
                Path(scratch) / f"{label}_model.npz",
                name,
                hidden,
                training,
                device,
                threads,
            )
            frames.append(pd.read_csv(accuracy).assign(training=label))
    save_csv(out_csv, pd.concat(frames, ignore_index=True), exact=True)


@timed
def evaluate_rival(test_path, model_path, out_path, name, method, eps):
    """Accuracy of a rival's networks on the target test split."""
    test = load_block(test_path, ("x", "y"))
    scores = _scores(load_block(model_path, (), test["seeds"]), test)
    save_csv(out_path, pd.DataFrame({"dataset": name, "seed": test["seeds"], "eps": eps, "method": method} | scores))

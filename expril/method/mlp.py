"""Scoring stacked MLPs with numpy alone, so the oracle and evaluation jobs never import torch.

A model is a dict of numpy arrays holding B networks (one per run seed of a seed block):
  - network models: W0..WL float32 (B, in, out), b0..bL float32 (B, out), and mean, std float32
    (B, d), each network's input standardisation; L = len(hidden), the last layer has one logit;
    the hidden layers' activation is ReLU, or `activation` where the model names another ("tanh");
  - the constant hypothesis: {"constant": int8 label, "n_models": B}.
It is saved with `io.save_npz(path, **model)`.
"""

import hashlib

import numpy as np


def constant_model(value, n_models):
    """B copies of the hypothesis predicting `value` everywhere (h_0 = 1 in ExPriL)."""
    if value not in (0, 1):
        raise ValueError(f"constant label must be 0 or 1, got {value!r}")
    return {"constant": np.array(value, dtype=np.int8), "n_models": np.array(int(n_models))}


def n_models(model):
    if "constant" in model:
        return int(model["n_models"])
    return model["W0"].shape[0]


def _n_layers(model):
    return sum(1 for key in model if key.startswith("W"))


def fit_standardisation(x):
    """Per-network mean and std of x (B, n, d), float32 (B, d); a constant feature gets std 1.

    Each network is computed on its own, so its scaler does not depend on the others."""
    x = np.asarray(x, dtype=np.float64)
    mean = np.stack([xb.mean(axis=0) for xb in x])
    std = np.stack([xb.std(axis=0) for xb in x])
    std[np.ptp(x, axis=1) == 0] = 1.0
    return mean.astype(np.float32), std.astype(np.float32)


def standardise(x, mean, std):
    """x (B, n, d) -> float32 (x - mean) / std, the networks' input (training uses it too)."""
    x = np.asarray(x, dtype=np.float32)
    return (x - mean[:, None, :]) / std[:, None, :]


ACTIVATIONS = {"relu": lambda h: np.maximum(h, 0), "tanh": np.tanh}


def activation_entry(activation):
    """The model entry naming a hidden activation: none for ReLU, the default (older models too)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}, expected one of {sorted(ACTIVATIONS)}")
    return {} if activation == "relu" else {"activation": np.array(activation)}


def logits(model, x):
    """Float32 logits (B, n) of a network model on x (B, n, d)."""
    _check_input(model, x)
    h = standardise(x, model["mean"], model["std"])
    act = ACTIVATIONS[str(model.get("activation", "relu"))]
    last = _n_layers(model) - 1
    for layer in range(last):
        h = act(h @ model[f"W{layer}"] + model[f"b{layer}"][:, None, :])
    return (h @ model[f"W{last}"] + model[f"b{last}"][:, None, :])[..., 0]


def predict(model, x):
    """Int8 labels (B, n) of the B networks on their own sets x (B, n, d): 1 where logit >= 0."""
    x = np.asarray(x)
    if "constant" in model:
        _check_sets(model, x)
        return np.full(x.shape[:2], model["constant"], dtype=np.int8)
    return (logits(model, x) >= 0).astype(np.int8)


def select(model, index):
    """The sub-model made of the networks at positions `index` (a list of ints)."""
    index = np.asarray(index, dtype=int)
    if index.ndim != 1:
        raise ValueError(f"index must be a list of network positions, got shape {index.shape}")
    size = n_models(model)
    if index.size and (index.min() < -size or index.max() >= size):
        raise IndexError(f"index {index.tolist()} out of range for a model of {size} networks")
    if "constant" in model:
        return constant_model(int(model["constant"]), index.size)
    # The activation, one for the whole block, is a 0-d entry.
    return {key: value[index] if value.ndim else value for key, value in model.items()}


def _check_sets(model, x):
    if x.ndim != 3:
        raise ValueError(f"x must be (networks, samples, features), got shape {x.shape}")
    if x.shape[0] != n_models(model):
        raise ValueError(f"model has {n_models(model)} networks but x has {x.shape[0]} sets")


def _check_input(model, x):
    _check_sets(model, x)
    if x.shape[2] != model["mean"].shape[1]:
        raise ValueError(f"model expects {model['mean'].shape[1]} features, x has {x.shape[2]}")


def digest(model, index):
    """A SHA-256 digest of network `index` alone (its parameters, or the constant)."""
    one = select(model, [index])
    h = hashlib.sha256()
    for key in sorted(one):
        if key != "n_models":
            h.update(key.encode() + np.ascontiguousarray(one[key]).tobytes())
    return h.hexdigest()

"""Rival 2: the curator trains the network itself with DP-SGD (Opacus) and releases it.

One network per call. A seed block's networks are trained one after the other, each with its
own Opacus PrivacyEngine: Opacus computes per-sample gradients of a batched module too (one
per batch slot across the block's networks), but its optimizer clips a sample's gradient over
all of the module's parameters, so a batched block would be clipped jointly across networks,
and its data loader draws one Poisson batch for the module, where each network needs its own
draw from its own data. Batching would replace Opacus's clipping and sampling, the parts the
guarantee rests on, by our own code (docs/comparison.md).
"""

import math

import numpy as np
import torch
from opacus import PrivacyEngine
from opacus.data_loader import DPDataLoader
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def network(sizes, init_seed):
    """An MLP of layer widths `sizes` (ReLU, one logit), initialised as nn.Linear's default from
    `init_seed`, as expril.method.training initialises its networks."""
    with torch.random.fork_rng():
        torch.manual_seed(init_seed)
        layers = [nn.Linear(fan_in, fan_out) for fan_in, fan_out in zip(sizes[:-1], sizes[1:])]
    return nn.Sequential(*[m for layer in layers[:-1] for m in (layer, nn.ReLU())], layers[-1])


def train_private(inputs, labels, hidden, lr, batch_size, mechanism, init_seed, sampling_seed, noise_seed):
    """Train one network on standardised `inputs` (n, d) with `labels` (n,) in {0, 1} under
    `mechanism` (expril.privacy.mechanisms.DPSGD): Adam on the mean binary cross-entropy of Poisson
    batches (expected size n / ceil(n / batch_size)), for the plan's epochs; with privacy, through
    Opacus (per-sample clipping and Gaussian noise, ghost clipping's two backward passes). Returns
    the layers [W0, b0, W1, ...] as float32 arrays (W: (in, out)) and the eps Opacus's accountant
    spent at the plan's delta (inf without privacy)."""
    model = network([inputs.shape[1], *hidden, 1], init_seed)
    data = TensorDataset(torch.as_tensor(inputs, dtype=torch.float32), torch.as_tensor(labels, dtype=torch.float32))
    loader = DataLoader(data, batch_size=batch_size, generator=torch.Generator().manual_seed(sampling_seed))
    if 1 / len(loader) != mechanism.sample_rate:
        raise ValueError(
            f"{len(data)} samples in batches of {batch_size} give a sample rate of 1/{len(loader)}, "
            f"but the privacy plan was made for {mechanism.sample_rate}"
        )
    optimizer = torch.optim.Adam(model.parameters(), lr)
    criterion = nn.BCEWithLogitsLoss()
    engine = None
    if mechanism.private:
        engine = PrivacyEngine(accountant="rdp")
        model, optimizer, criterion, loader = engine.make_private(
            module=model,
            optimizer=optimizer,
            criterion=criterion,
            data_loader=loader,
            noise_multiplier=mechanism.noise_multiplier,
            max_grad_norm=mechanism.max_grad_norm,
            poisson_sampling=True,
            grad_sample_mode="ghost",
            noise_generator=torch.Generator().manual_seed(noise_seed),
        )
    else:
        # The non-private counterpart: the same sampling and optimiser, no clipping, no noise.
        loader = DPDataLoader.from_data_loader(loader)
    for _ in range(mechanism.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x)[:, 0], y).backward()
            optimizer.step()
    linear = [m for m in model.modules() if isinstance(m, nn.Linear)]
    layers = [a for m in linear for a in (m.weight.detach().T.contiguous().numpy(), m.bias.detach().numpy())]
    return layers, mechanism.spent(engine.accountant) if engine else math.inf


def stack(networks, mean, std):
    """A block model (expril.method.mlp) from per-seed layer lists and the inputs' standardisation."""
    names = [f"{kind}{layer}" for layer in range(len(networks[0]) // 2) for kind in "Wb"]
    return {**{name: np.stack(arrays) for name, arrays in zip(names, zip(*networks))}, "mean": mean, "std": std}

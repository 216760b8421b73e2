"""Opacus 1.6's own way of training one DP-SGD network, PrivacyEngine.make_private (ghost clipping,
Adam): the reference expril.rivals.dpsgd's block trainer is tested (tests/rivals/test_dpsgd.py) and
timed (benchmarks/dpsgd_batched.py) against."""

import torch
from opacus import PrivacyEngine
from opacus.data_loader import DPDataLoader
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from expril.rivals import dpsgd


def train_one(inputs, labels, hidden, lr, batch_size, plan, init_seed, sampling_seed, noise_seed, activation="relu"):
    """One network through Opacus's PrivacyEngine.make_private (ghost clipping, Adam), as the
    workflow trained them one at a time before the block trainer; eps = inf: the same sampling and
    optimiser without an engine. `plan`: expril.privacy.dpsgd.DPSGD; the layers [W0, b0, ...], W (in, out).
    `activation` as expril.rivals.dpsgd.network's."""
    model = dpsgd.network([inputs.shape[1], *hidden, 1], init_seed, activation)
    data = TensorDataset(torch.as_tensor(inputs), torch.as_tensor(labels, dtype=torch.float32))
    loader = DataLoader(data, batch_size=batch_size, generator=torch.Generator().manual_seed(sampling_seed))
    optimizer = torch.optim.Adam(model.parameters(), lr)
    criterion = nn.BCEWithLogitsLoss()
    if plan.private:
        model, optimizer, criterion, loader = PrivacyEngine(accountant="rdp").make_private(
            module=model,
            optimizer=optimizer,
            criterion=criterion,
            data_loader=loader,
            noise_multiplier=plan.noise_multiplier,
            max_grad_norm=plan.max_grad_norm,
            poisson_sampling=True,
            grad_sample_mode="ghost",
            noise_generator=torch.Generator().manual_seed(noise_seed),
        )
    else:
        loader = DPDataLoader.from_data_loader(loader)
    for _ in range(plan.epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            criterion(model(xb)[:, 0], yb).backward()
            optimizer.step()
    linear = [m for m in model.modules() if isinstance(m, nn.Linear)]
    return [a for m in linear for a in (m.weight.detach().T.contiguous().numpy(), m.bias.detach().numpy())]

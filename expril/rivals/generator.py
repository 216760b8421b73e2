"""DP-MERF's generators (expril.rivals.dpmerf), trained for a seed block as one batched model.

Generator b maps a code z ~ N(0, I) and a one-hot label c to a record in the standardised space
of its run's feature map; it is trained, as in DP-MERF, to minimise the squared distance between
the released class-conditional embedding and the embedding of its own samples,

    sum_c | F_c - w_c mean_k phi(G(z_k, c)) |^2,

F_c and w_c the learner's reading of the release (dpmerf.read), with a fresh batch of `batch_size`
codes per class at every Adam step. Networks share no parameter (stacked weights, batched
matmuls, each from its own torch generator), as in expril.method.training, whose initialisation and
optimiser this module uses.
"""

import numpy as np
import torch

from expril.method import rff
from expril.method.training import Adam, init_params, param_shapes, resolve_device, views
from expril.rivals.dpmerf import CLASSES, read


def train_generators(
    released,
    maps,
    hidden,
    noise_dim,
    steps,
    batch_size,
    lr,
    init_seeds,
    device="cpu",
    threads=1,
    log=None,
    balanced=False,
):
    """Generators for B releases (B, D+1, C) and their feature maps (rff.stack of B maps).

    `balanced`: the official tabular code's class weighting (ParkLabML/DP-MERF, code_tab), the loss
    sum_c | F_c / w_c - mean_k phi(G(z_k, c)) |^2, every class's embedding matched at equal weight
    (w_c floored at 1e-3, as the official code floors a negative weight), instead of the module's
    sum_c | F_c - w_c mean_k phi(G(z_k, c)) |^2, which weights each class by its share squared.

    Network b draws its initial weights, then its codes, from torch.Generator().manual_seed(
    init_seeds[b]) on CPU. Returns the generators as a dict of arrays (`generate` samples them)
    and each one's final loss relative to |F|^2 (0: the samples' embedding matches the release).
    """
    torch.set_num_threads(threads)
    dev = resolve_device(device)
    features, weights = read(released)
    n_networks, d = maps["mean"].shape
    shapes = param_shapes([noise_dim + CLASSES, *hidden, d])
    generators = [torch.Generator().manual_seed(int(s)) for s in init_seeds]
    params = [p.to(dev) for p in init_params(generators, shapes)]
    target = torch.from_numpy(np.ascontiguousarray(features.transpose(0, 2, 1))).to(dev, torch.float32)
    weights = torch.from_numpy(weights).to(dev, torch.float32)
    if balanced:
        target, weights = target / weights.clamp(min=1e-3)[..., None], torch.ones_like(weights)
    feature_map = {k: torch.from_numpy(v).to(dev, torch.float32) for k, v in maps.items()}
    per_class = {k: v[:, None] for k, v in feature_map.items()}  # broadcast over the class axis
    optimizer = Adam(params, lr)
    for step in range(steps):
        samples = _sample(optimizer.params, shapes, feature_map, generators, batch_size, dev)
        phi = mean_features(per_class, samples.view(n_networks, CLASSES, batch_size, -1))
        loss = ((target - weights[..., None] * phi) ** 2).sum(dim=(1, 2))
        # Each network's loss depends on its own parameters only: the sum keeps the gradients apart.
        optimizer.step(torch.autograd.grad(loss.sum(), optimizer.params))
        if log and ((step + 1) * 10 // steps > step * 10 // steps):
            relative = (loss.detach() / (target**2).sum(dim=(1, 2))).cpu().numpy()
            log(f"step {step + 1}/{steps}: loss / |F|^2 median {np.median(relative):.4f}, max {relative.max():.4f}")
    relative = (loss.detach() / (target**2).sum(dim=(1, 2))).cpu().numpy()
    model = {f"p{i}": p.detach().cpu().numpy() for i, p in enumerate(optimizer.params)}
    return model | {"hidden": np.array(hidden), "noise_dim": np.array(noise_dim)}, relative


def generate(model, maps, released, n, init_seeds, label_generators):
    """n records (x (B, n, d) in the source's units, y (B, n)) from each generator: labels drawn
    with the released class weights (uniform where all read as 0), codes from torch generators
    seeded by init_seeds."""
    _, weights = read(released)
    d = maps["mean"].shape[1]
    shapes = param_shapes([int(model["noise_dim"]) + CLASSES, *model["hidden"].tolist(), d])
    params = [torch.from_numpy(model[f"p{i}"]) for i in range(len(shapes))]
    feature_map = {k: torch.from_numpy(v).to(torch.float32) for k, v in maps.items()}
    ys = []
    for w, g in zip(weights, label_generators):
        p = w / w.sum() if w.sum() > 0 else np.full(CLASSES, 1 / CLASSES)
        ys.append(g.choice(CLASSES, size=n, p=p))
    y = np.stack(ys)
    generators = [torch.Generator().manual_seed(int(s)) for s in init_seeds]
    with torch.no_grad():
        x = _forward(params, shapes, feature_map, generators, torch.from_numpy(y), torch.device("cpu"))
    return x.numpy().astype(np.float64), y.astype(np.int8)


def mean_features(feature_map, x):
    """The mean of phi (expril.method.rff) over x's samples (..., n, d), (..., D), on torch
    tensors (the map's arrays converted alike), which the generator's loss differentiates."""
    z = rff.projection(feature_map, x)
    cos, sin = _MeanCosSin.apply(z)
    return torch.cat([cos, sin], dim=-1) * rff.amplitude(z)


class _MeanCosSin(torch.autograd.Function):
    """(cos z, sin z) averaged over the samples' axis (-2), with autograd's own gradient computed
    from the forward pass's cos and sin. Autograd's recomputes both, negates sin and expands each
    mean's gradient divided by n, eight passes over the (networks x codes x D/2) arguments, which
    bound the generator's training (docs/performance.md); this takes three. Each element is the same
    float: a / n computed before or after the expansion, g * -s = -(g * s) and p + -q = p - q are
    exact identities of IEEE arithmetic, so the generators stay bit for bit what they were (tested)."""

    @staticmethod
    def forward(ctx, z):
        cos, sin = z.cos(), z.sin()
        ctx.save_for_backward(cos, sin)
        return cos.mean(dim=-2), sin.mean(dim=-2)

    @staticmethod
    def backward(ctx, grad_cos, grad_sin):
        cos, sin = ctx.saved_tensors
        n = cos.shape[-2]
        return (grad_sin / n).unsqueeze(-2) * cos - (grad_cos / n).unsqueeze(-2) * sin


def _sample(params, shapes, feature_map, generators, batch_size, dev):
    """batch_size samples of every class from every generator, class-major: (B, C x batch, d)."""
    labels = torch.arange(CLASSES).repeat_interleave(batch_size).expand(len(generators), -1)
    return _forward(params, shapes, feature_map, generators, labels, dev)


def _forward(params, shapes, feature_map, generators, labels, dev):
    """Records in the source's units for labels (B, m): fresh codes from each network's generator."""
    m = labels.shape[1]
    noise_dim = shapes[0][0] - CLASSES
    codes = torch.stack([torch.randn(m, noise_dim, generator=g) for g in generators]).to(dev)
    h = torch.cat([codes, torch.nn.functional.one_hot(labels, CLASSES).to(dev, torch.float32)], dim=2)
    layers = views(params, shapes)
    for i, (weight, bias) in enumerate(zip(layers[::2], layers[1::2])):
        h = torch.baddbmm(bias[:, None, :], h, weight)
        if i < len(layers) // 2 - 1:
            h = torch.relu(h)
    return feature_map["mean"][:, None, :] + feature_map["std"][:, None, :] * h

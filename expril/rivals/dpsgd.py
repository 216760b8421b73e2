"""Rival 2: the curator trains networks with DP-SGD and releases them (docs/comparison.md).

A seed block's networks are trained together in one process, each as Opacus 1.6's
PrivacyEngine.make_private (ghost clipping) trains one:
Poisson sampling, each sample's gradient clipped over all of the network's parameters, Gaussian
noise on the sum, division by the expected batch size (of the public n': see `train`), then Adam
(or momentum SGD); each with its own data, seeds and hyperparameters (lr, clipping, noise,
momentum). The B networks' layers are stacked, W (B, out, in) as nn.Linear's, so a step is a few
batched matmuls for the whole block.
The noise is sized by Opacus's RDP accountant (expril.privacy.calibration, expril.privacy.dpsgd.DPSGD);
tests/rivals/test_dpsgd.py checks the updates against Opacus's own clipping, noise and optimiser.

Per-sample gradients are never materialised: for a linear layer, sample i's weight gradient is the
outer product of its input a_i and of the loss's gradient g_i w.r.t. the layer's output, so its
norm is |a_i| |g_i|, and the sum of clipped gradients, sum_i c_i a_i g_i^T, is one matmul
(Goodfellow 2015; the norms Opacus's ghost clipping computes). For 20 [16, 256, 256, 16] networks
and batches of 256, torch.func's per-sample gradients (vmap of grad) fill 1.7 GB and take 3.3 s a
step on one core, this 0.05 s.

Randomness is drawn as Opacus draws it, per network from its own generators, so that a network's
result depends on its seeds alone (not on the networks beside it, B or the thread count; tested)
and equals Opacus's for the same seeds up to float rounding.
"""

import math

import numpy as np
import torch
from torch import nn

# Each network's batch is padded to a multiple of this many slots, so each network's share of
# every (B, slots, width) tensor fills whole SIMD chunks: CPU kernels finish a tensor's odd tail
# with scalar code that rounds differently (sigmoid, tanh), and which network landed there would
# depend on the other networks' batch sizes (as in expril.method.training).
ALIGN = 32
ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh}


def network(sizes, init_seed, activation="relu"):
    """An MLP of layer widths `sizes` (ReLU or tanh hidden layers, one logit), initialised as
    nn.Linear's default from `init_seed`, as expril.method.training initialises its networks."""
    with torch.random.fork_rng():
        torch.manual_seed(init_seed)
        layers = [nn.Linear(fan_in, fan_out) for fan_in, fan_out in zip(sizes[:-1], sizes[1:])]
    return nn.Sequential(*[m for layer in layers[:-1] for m in (layer, ACTIVATIONS[activation]())], layers[-1])


def train(
    inputs,
    labels,
    hidden,
    *,
    records,
    sample_rate,
    epochs,
    lr,
    max_grad_norm,
    noise_multiplier,
    init_seeds,
    sampling_seeds,
    noise_seeds,
    optimizer="adam",
    momentum=0.0,
    activation="relu",
):
    """Train B binary classifiers with DP-SGD, network b on (inputs[b], labels[b]).

    inputs (B, n, d) standardised, labels (B, n) in {0, 1}; records: n', the configured (public)
    number of records, which the noisy sum is divided by; hidden: hidden widths (multiples of 16
    keep each network's result bitwise independent of the others: MKL's matmul rounds according
    to memory alignment). lr, max_grad_norm, noise_multiplier and momentum: one number for all
    networks or one per network. optimizer: "adam" (torch.optim.Adam's defaults) or "sgd"
    (torch.optim.SGD with `momentum`, no dampening).

    epochs x int(1 / sample_rate) steps, each: a Poisson batch (every sample kept with
    probability sample_rate), the binary cross-entropy of each sample's logit, its gradient
    clipped to L2 norm max_grad_norm over all parameters (factor min(1, C / (norm + 1e-6)), as
    Opacus), summed, plus N(0, (noise_multiplier x max_grad_norm)^2) noise per coordinate, divided
    by the expected batch size int(records x sample_rate), then an optimizer step. Here we differ
    from Opacus, whose divisor int(len(dataset) x sample_rate) is the realised number of records:
    under add/remove-one-record it moves with the private data (an unaccounted release, as the
    paper's bin counts query's, docs/privacy.md); ours is public. With n = records they coincide,
    which is how the tests compare the two.
    max_grad_norm = inf trains a network without privacy (eps = inf): no
    clipping, no noise (its noise_multiplier must be 0), the mean gradient over the sampled batch.

    Network b draws its initial weights as network(sizes, init_seeds[b]), its batches from
    torch.Generator().manual_seed(sampling_seeds[b]) and its noise from one seeded with
    noise_seeds[b], in Opacus's order: Opacus's randomness for the same seeds.
    Returns {"W0": (B, d, h0), "b0": (B, h0), ..., "WL": (B, hL, 1), "bL": (B, 1)} float32 numpy
    arrays (expril.method.mlp's model without the standardisation), and the number of steps
    taken, which the accountant charges.
    """
    x = torch.as_tensor(np.asarray(inputs), dtype=torch.float32)
    y = torch.as_tensor(np.asarray(labels), dtype=torch.float32)
    if x.ndim != 3 or y.shape != x.shape[:2]:
        raise ValueError(
            f"inputs must be (networks, samples, features) and labels (networks, samples), "
            f"got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    n_nets, n = y.shape
    if not ((y == 0) | (y == 1)).all():
        raise ValueError("labels must be 0 or 1")
    if not all(len(s) == n_nets for s in (init_seeds, sampling_seeds, noise_seeds)):
        raise ValueError(f"{n_nets} networks need {n_nets} init, sampling and noise seeds each")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample rate must be in (0, 1], got {sample_rate}")
    if activation not in ACTIVATIONS or optimizer not in ("adam", "sgd"):
        raise ValueError(f"unknown activation {activation!r} or optimizer {optimizer!r}")
    lr, clip, sigma, momentum = (
        _per_network(v, n_nets, name)
        for v, name in (
            (lr, "lr"),
            (max_grad_norm, "max_grad_norm"),
            (noise_multiplier, "noise_multiplier"),
            (momentum, "momentum"),
        )
    )
    private = [math.isfinite(c) for c in clip]
    if any(c <= 0 for c in clip) or any(s < 0 for s in sigma):
        raise ValueError("max_grad_norm must be positive and noise_multiplier non-negative")
    if any(s > 0 and not p for s, p in zip(sigma, private)):
        raise ValueError("a network without clipping (max_grad_norm = inf) cannot have noise")
    # Truncated as Opacus's int(len(dataset) * sample_rate), but of the public n', not the realised n.
    expected = int(records * sample_rate)
    if any(private) and expected == 0:
        raise ValueError(f"an expected batch of {records} x {sample_rate} samples rounds to none")

    sizes = [x.shape[2], *hidden, 1]
    linear = [[m for m in network(sizes, int(s), activation) if isinstance(m, nn.Linear)] for s in init_seeds]
    # Stacked in nn.Linear's layout, W (B, out, in), the shape Opacus draws each noise tensor in.
    params = [
        torch.stack([getattr(net[layer], kind).detach() for net in linear])
        for layer in range(len(sizes) - 1)
        for kind in ("weight", "bias")
    ]
    grads, noise = [torch.zeros_like(p) for p in params], [torch.zeros_like(p) for p in params]
    samplers = [torch.Generator().manual_seed(int(s)) for s in sampling_seeds]
    noisers = [torch.Generator().manual_seed(int(s)) for s in noise_seeds]
    clip_t = torch.tensor(clip, dtype=torch.float32)[:, None]
    privacy = torch.tensor(private)
    update = _Optimizer(optimizer, params, grads, lr, momentum)
    steps_per_epoch = int(1 / sample_rate)  # Opacus's sampler's batches per epoch
    # Samples padded to a whole number of slot groups, never drawn, so a batch always fits.
    rows_per_net = -(-n // ALIGN) * ALIGN
    x, y = (torch.nn.functional.pad(a, (0, 0) * (a.ndim - 2) + (0, rows_per_net - n)).flatten(0, 1) for a in (x, y))
    offsets = torch.arange(n_nets)[:, None] * rows_per_net
    taken = 0
    for _ in range(epochs):
        # Opacus's DPDataLoader is a DataLoader: each epoch's iterator first draws a base seed
        # for its workers from the loader's generator, the one its sampler draws batches from.
        for g in samplers:
            torch.empty((), dtype=torch.int64).random_(generator=g)
        for _ in range(steps_per_epoch):
            # Opacus's UniformWithReplacementSampler: sample i is in the batch if rand < rate.
            mask = torch.zeros(n_nets, rows_per_net, dtype=torch.bool)
            for b, g in enumerate(samplers):
                mask[b, :n] = torch.rand(n, generator=g) < sample_rate
            counts = mask.sum(dim=1)
            width = max(ALIGN, -(-int(counts.max()) // ALIGN) * ALIGN)
            # A stable sort puts each network's batch first, in the order of its samples; the
            # padding slots hold unsampled rows, which the zero weight of `valid` cancels.
            order = torch.sort(mask.to(torch.uint8), dim=1, descending=True, stable=True).indices[:, :width]
            rows = (order + offsets).flatten()
            valid = (torch.arange(width) < counts[:, None]).float()
            _clipped_sums(
                params, x[rows].view(n_nets, width, -1), y[rows].view(n_nets, width), valid, clip_t, activation, grads
            )
            for b, g in enumerate(noisers):
                if sigma[b] > 0:
                    for buffer in noise:
                        # Opacus's _generate_noise, torch.normal(0, std, shape, generator), parameter
                        # by parameter; normal_ draws the same numbers in place.
                        buffer[b].normal_(0, sigma[b] * clip[b], generator=g)
            # Opacus divides by the expected batch size; without privacy, the mean is over the batch.
            scale = torch.where(privacy, expected, counts.clamp(min=1)).float()
            for grad, z in zip(grads, noise):
                grad.add_(z).div_(scale.view(-1, *[1] * (grad.ndim - 1)))
            update()
            taken += 1
    names = [f"{kind}{layer}" for layer in range(len(sizes) - 1) for kind in "Wb"]
    return {name: (p.mT if name[0] == "W" else p).contiguous().numpy() for name, p in zip(names, params)}, taken


def _per_network(value, n_nets, name):
    """A hyperparameter as one float per network."""
    values = np.asarray(value, dtype=np.float64)
    if values.ndim > 1 or values.size not in (1, n_nets):
        raise ValueError(f"{name} must be one number or one per network ({n_nets}), got {value!r}")
    return np.broadcast_to(values, (n_nets,)).tolist()


def _clipped_sums(params, x, y, valid, clip, activation, sums):
    """Write into `sums` each network's sum over its batch (the slots where valid (B, m) is 1) of
    its samples' gradients of the binary cross-entropy, each clipped to L2 norm clip (B, 1) over
    all parameters; params and sums: [W0 (B, out, in), b0 (B, out), W1, ...]."""
    weights, biases = params[::2], params[1::2]
    inputs = [x]  # each layer's input, (B, m, in)
    for w, b in zip(weights[:-1], biases[:-1]):
        inputs.append(getattr(torch, activation)(torch.bmm(inputs[-1], w.mT) + b[:, None, :]))
    # Not bmm: MKL's kernel for a one-column product rounds differently for B = 1 and B > 1.
    logits = (inputs[-1] * weights[-1]).sum(dim=2) + biases[-1]
    # Backpropagation by hand: out[l] is the loss's gradient w.r.t. layer l's output, (B, m, out).
    out = [(torch.sigmoid(logits) - y)[..., None]]
    for w, a in zip(weights[:0:-1], inputs[:0:-1]):
        back = torch.bmm(out[0], w)
        # ReLU's backward as autograd's (torch.where is 25x slower here).
        out.insert(0, torch.ops.aten.threshold_backward(back, a, 0) if activation == "relu" else back * (1 - a * a))
    # As Opacus: the norm of each parameter's per-sample gradient norms, |a_i| |g_i| for a
    # weight, |g_i| for a bias.
    g_norms = [torch.linalg.vector_norm(g, dim=2) for g in out]
    norms = torch.linalg.vector_norm(
        torch.stack([n for a, g in zip(inputs, g_norms) for n in (torch.linalg.vector_norm(a, dim=2) * g, g)]), dim=0
    )
    factor = ((clip / (norms + 1e-6)).clamp(max=1.0) * valid)[..., None]
    for a, g, weight_sum, bias_sum in zip(inputs, out, sums[::2], sums[1::2]):
        g = g * factor
        if g.shape[2] == 1:
            # The output layer's one-row product, not by bmm either: MKL rounds it apart for B = 1
            # (sgemm) and B > 1 (sgemm_batch) on Intel's AVX-512 CPUs. Rounded products summed over
            # the slots, as autograd sums expril.method.training's output layer.
            torch.sum(g * a, dim=1, keepdim=True, out=weight_sum)
        else:
            torch.bmm(g.mT, a, out=weight_sum)
        torch.sum(g, dim=1, out=bias_sum)


class _Optimizer:
    """torch.optim.Adam (its defaults) or SGD (momentum, no dampening) through torch's fused CPU
    kernels, one call per group of networks sharing lr (and momentum), each network's part of
    each parameter passed as a tensor of its own: the kernels round a tensor's tail apart, so a
    network's update does not depend on the others. The kernels' in-place single pass is 3x
    faster than Adam's dozen elementwise ops on a [16, 256, 256, 16] block."""

    def __init__(self, kind, params, grads, lr, momentum):
        self.kind, self.first = kind, True
        self.step = torch.zeros(())
        # Adam's two moments, or SGD's momentum buffer (and an unused one).
        states = [[torch.zeros_like(p) for p in params] for _ in range(2)]
        self.groups = []
        for key in sorted(set(zip(lr, momentum))):
            nets = [b for b, k in enumerate(zip(lr, momentum)) if k == key]
            self.groups.append((key, *([t[b] for t in tensors for b in nets] for tensors in (params, grads, *states))))

    def __call__(self):
        self.step += 1
        for (lr, momentum), params, grads, first, second in self.groups:
            if self.kind == "adam":
                torch._fused_adam_(
                    params,
                    grads,
                    first,
                    second,
                    [],
                    [self.step] * len(params),
                    lr=lr,
                    beta1=0.9,
                    beta2=0.999,
                    weight_decay=0.0,
                    eps=1e-8,
                    amsgrad=False,
                    maximize=False,
                )
            else:
                torch._fused_sgd_(
                    params,
                    grads,
                    first if momentum else [],
                    weight_decay=0.0,
                    momentum=momentum,
                    lr=lr,
                    dampening=0.0,
                    nesterov=False,
                    maximize=False,
                    is_first_step=self.first,
                )
        self.first = False


def stack(layers, mean, std):
    """A block model (expril.method.mlp) from `train`'s layers and the inputs' standardisation."""
    return {**layers, "mean": mean, "std": std}

"""Training a seed block of small MLPs as one batched model.

The B networks of a block share no parameter: each layer's weights are stacked over the
networks and every step is a batched matmul, so one Python process trains the whole block.
What a network learns from is its target: labels (`Labels`: h*, ExPriL's h_t) or the label
proportions of bags (`Bags`: learning from label proportions); the training is the same.
"""

import ctypes
import math
import time

import numpy as np
import torch
import torch.nn.functional as F

from expril.method import mlp

# Each network's share of a tensor (its mini-batch slots, its part of each parameter) is padded
# to a multiple of this many floats (2 AVX-512 vectors of float32), so it fills whole SIMD
# chunks: CPU kernels finish a tensor's odd tail with scalar code that rounds differently
# (sigmoid, fused Adam), and which network landed in that tail would depend on the block size.
ALIGN = 32


def train_mlps(
    x,
    y,
    w,
    hidden,
    init_seeds,
    epochs,
    batch_size,
    lr,
    holdout=0.0,
    patience=0,
    device="cpu",
    threads=1,
    log=None,
    activation="relu",
):
    """Train B binary classifiers, network b on (x[b], y[b]) with sample weights w[b].

    x (B, n, d) float, y (B, n) labels in {0, 1} or a `Bags` target, w (B, n) non-negative,
    hidden: hidden widths ([] for logistic regression), `activation` of the hidden layers
    ("relu" or "tanh"),
    init_seeds: B ints. Network b draws its initial weights, then its held-out samples, then its
    epoch orders from torch.Generator().manual_seed(init_seeds[b]) on CPU, so none depends on
    the device. Returns a model dict (see expril.method.mlp).

    With patience > 0, a `holdout` share of each network's samples is set aside: after every
    epoch its weighted loss there is measured, the network keeps the parameters of its best
    epoch and stops once `patience` epochs pass without improvement (`epochs` is the maximum).
    Stopped networks leave the batch, so the block costs what its networks need.

    A network's result is bitwise the same whatever networks share its block and whatever
    `threads` is (tested on CPU with MKL, hidden widths multiples of 16: MKL's matmul rounds
    according to memory alignment, which other widths make differ from network to network).
    `log(str)` gets progress every 10 % of epochs and when the last network stops.
    """
    torch.set_num_threads(threads)
    _keep_freed_memory()
    dev = resolve_device(device)
    target = y if isinstance(y, Bags) else Labels(y)
    x, w = _check_data(x, target, w, init_seeds)
    mean, std = mlp.fit_standardisation(x)
    generators = [torch.Generator().manual_seed(int(s)) for s in init_seeds]
    shapes = param_shapes([x.shape[2], *hidden, 1])
    params = [p.to(dev) for p in init_params(generators, shapes)]
    fit, held = _split(generators, x.shape[1], holdout if patience else 0.0)
    if patience and not held.shape[1]:
        raise ValueError(
            f"early stopping (patience {patience}) needs held-out samples, but holdout "
            f"{holdout} of {x.shape[1]} samples holds out none"
        )
    data = [torch.from_numpy(a).to(dev) for a in (mlp.standardise(x, mean, std), w, *target.arrays)]
    train, check = _rows_at(fit, *data), _rows_at(held, *data)
    best = [p.clone() for p in params]
    best_loss = torch.full((len(generators),), math.inf, device=dev)
    waited = torch.zeros(len(generators), dtype=torch.long, device=dev)
    active = torch.arange(len(generators), device=dev)
    optimizer = Adam(params, lr)
    start = time.perf_counter()
    for epoch in range(epochs):
        loss = _epoch(
            optimizer,
            shapes,
            activation,
            target.loss,
            *train,
            generators=[generators[i] for i in active.tolist()],
            batch_size=batch_size,
        )
        if patience:
            current = _held_out_loss(optimizer.params, shapes, activation, target.loss, *check)
            improved = current < best_loss[active]
            best_loss[active] = torch.where(improved, current, best_loss[active])
            for kept, now in zip(best, optimizer.params):
                kept[active[improved]] = now.detach()[improved]
            waited[active] = torch.where(improved, 0, waited[active] + 1)
            going = waited[active] < patience
            if not going.all():
                active = active[going]
                optimizer.keep(going)
                train, check = ([a[going] for a in part] for part in (train, check))
        # Every 10 % of epochs, and when the last network stops.
        if log and ((epoch + 1) * 10 // epochs > epoch * 10 // epochs or not len(active)):
            log(
                f"epoch {epoch + 1}/{epochs}: mean loss {loss:.4f}, {len(active)} of "
                f"{len(generators)} networks training, {time.perf_counter() - start:.1f} s"
            )
        if not len(active):
            break
    final = best if patience else [p.detach() for p in optimizer.params]
    names = [f"{kind}{layer}" for layer in range(len(hidden) + 1) for kind in "Wb"]
    layers = views([p.cpu() for p in final], shapes)
    model = {**{name: p.contiguous().numpy() for name, p in zip(names, layers)}, "mean": mean, "std": std}
    return model | mlp.activation_entry(activation)


class Labels:
    """Binary labels y (B, n): the sample-weighted cross-entropy of h* and ExPriL's h_t."""

    def __init__(self, y):
        y = np.asarray(y)
        if not np.isin(y, (0, 1)).all():
            raise ValueError("labels y must be 0 or 1")
        self.arrays = (y.astype(np.float32),)

    @staticmethod
    def loss(logits, weights, labels):
        """Each network's weighted sum of its samples' losses, (B,)."""
        return (weights * F.binary_cross_entropy_with_logits(logits, labels, reduction="none")).sum(dim=1)


class Bags:
    """Label proportions of overlapping bags to learn from (DLLP, Ardehaly and Culotta 2017).

    Sample i of network b lies in the bags bags[b, i] (one per feature, global ids: its bins),
    whose proportions of positives are proportions[b, i]. The loss of a batch sums, over the bags
    it meets, the bag's weight in the batch times the cross-entropy between the bag's proportion
    and its samples' weighted mean predicted probability in the batch, divided by the bags per
    sample: a batch holding one sample per bag gives the weighted cross-entropy against soft
    labels, a batch holding whole bags DLLP's loss.
    """

    def __init__(self, bags, proportions):
        bags, proportions = np.asarray(bags), np.asarray(proportions, dtype=np.float32)
        if bags.ndim != 3 or proportions.shape != bags.shape:
            raise ValueError(
                f"bags {bags.shape} and proportions {proportions.shape} must both be "
                "(networks, samples, bags per sample)"
            )
        if not np.issubdtype(bags.dtype, np.integer) or (bags < 0).any():
            raise ValueError("bag ids must be non-negative integers")
        if not ((proportions >= 0) & (proportions <= 1)).all():
            raise ValueError("bag proportions must lie in [0, 1]")
        self.arrays = (bags.astype(np.int64), proportions)
        self.width = int(bags.max()) + 1

    def loss(self, logits, weights, bags, proportions):
        """Each network's weighted sum over its samples and their bags, (B,), as for `Labels`."""
        flat = bags.flatten(1)

        def in_bag(values):
            """Per sample and bag, the sum of `values` (B, m) over the batch's samples in that bag."""
            wide = values[..., None].expand(bags.shape).flatten(1)
            return torch.zeros(len(flat), self.width, device=flat.device).scatter_add(1, flat, wide).gather(1, flat)

        # A bag met only by weightless samples (padding) has no mass: mean 0, weight 0, no gradient.
        mean = in_bag(weights * torch.sigmoid(logits)) / in_bag(weights).clamp_min(torch.finfo(torch.float32).tiny)
        loss = F.binary_cross_entropy(mean.clamp(max=1.0), proportions.flatten(1), reduction="none")
        return (weights[..., None].expand(bags.shape).flatten(1) * loss).sum(dim=1) / bags.shape[2]


def _split(generators, n, holdout):
    """Each network's fitting and held-out sample indices, (B, n - m) and (B, m)."""
    m = round(n * holdout)
    orders = (
        torch.stack([torch.randperm(n, generator=g) for g in generators])
        if m
        else torch.arange(n).expand(len(generators), n)
    )
    return orders[:, m:].sort(dim=1).values, orders[:, :m].sort(dim=1).values


def _rows_at(index, *arrays):
    """[a[b, index[b]] for every network b] for each of the arrays (B, n, ...), index (B, m).
    One flat row lookup: 4x faster than take_along_dim, which first wraps every broadcast index
    modulo the length."""
    index = index.to(arrays[0].device)
    flat = index + torch.arange(len(index), device=index.device)[:, None] * arrays[0].shape[1]
    return [a.flatten(0, 1)[flat] for a in arrays]


def _held_out_loss(params, shapes, activation, loss, inputs, weights, *targets):
    """Each network's weighted mean loss on its held-out samples, (B,), padded like a mini-batch
    with zeros (weight 0)."""
    n = inputs.shape[1]
    pad = -n % ALIGN
    inputs, weights, *targets = (F.pad(a, (0, 0) * (a.dim() - 2) + (0, pad)) for a in (inputs, weights, *targets))
    with torch.no_grad():
        return loss(forward(views(params, shapes), inputs, activation), weights, *targets) / n


def _keep_freed_memory():
    """Have glibc's malloc keep freed memory for reuse instead of handing it back to the kernel.
    With its defaults, large tensors are mmap-ed and the heap is trimmed as soon as a few tens of
    MB lie free, so a block's steps keep writing to fresh pages: 60,000-120,000 page faults per
    call for 100 [16,256,256,16] networks, and A's h* block trained in 124 s instead of 113 s.
    Changes no number. Other C libraries (macOS, musl) are left as they are."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt:
        mallopt(-4, 0)  # M_MMAP_MAX: nothing is mmap-ed, all comes from the heap
        mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GiB of free heap


def resolve_device(device):
    """'cpu', 'cuda' or 'auto' (cuda when available) -> torch.device."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'auto', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for but torch sees no CUDA device")
    return torch.device(device)


def forward(params, h, activation="relu"):
    """Logits (B, m) of the stacked networks on h (B, m, d); params = [W0, b0, W1, b1, ...]."""
    layers = list(zip(params[::2], params[1::2]))
    act = {"relu": torch.relu, "tanh": torch.tanh}[activation]
    for weight, bias in layers[:-1]:
        h = act(torch.bmm(h, weight) + bias[:, None, :])
    weight, bias = layers[-1]
    # Not bmm: MKL's kernel for a one-column product rounds differently for B = 1 and B > 1.
    return (h * weight[:, None, :, 0]).sum(dim=2) + bias


def _epoch(optimizer, shapes, activation, loss_of, inputs, weights, *targets, generators, batch_size):
    """One pass over each network's samples in its own random order; returns the mean loss."""
    n = inputs.shape[1]
    width = -(-batch_size // ALIGN) * ALIGN
    order = torch.stack([torch.randperm(n, generator=g) for g in generators])
    # Padding slots point at sample 0 and get weight 0: they add exact zeros to the gradients.
    order = F.pad(order, (0, width)).to(inputs.device)
    slots = torch.arange(width, device=inputs.device)
    total = torch.zeros((), device=inputs.device)
    for lo in range(0, n, batch_size):
        count = min(batch_size, n - lo)
        idx = order[:, lo : lo + width]
        xb, wb, *tb = _rows_at(idx, inputs, weights, *targets)
        wb = wb * (slots < count)
        logits = forward(views(optimizer.params, shapes), xb, activation)
        # Each network's loss is its own batch mean; summing them keeps the gradients apart.
        loss = (loss_of(logits, wb, *tb) / count).sum()
        optimizer.step(torch.autograd.grad(loss, optimizer.params))
        total += loss.detach() * count
    return total.item() / (n * len(generators))


class Adam:
    """Adam over stacked parameters, using torch.optim.Adam(fused=True)'s own kernel: one pass
    over the parameters (5x faster than the default Adam), called directly because the first
    use of torch.optim imports torch._dynamo: 1.3-1.8 s per process, as long as importing torch.
    Networks (rows) can leave: `keep` drops them from the parameters and the moments alike.
    """

    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        self.params = [p.requires_grad_() for p in params]
        self.exp_avgs = [torch.zeros_like(p) for p in params]
        self.exp_avg_sqs = [torch.zeros_like(p) for p in params]
        # One step count per tensor: every network in it has taken the same number of steps.
        self.steps = [torch.zeros((), device=p.device) for p in params]
        self.settings = dict(lr=lr, beta1=beta1, beta2=beta2, weight_decay=0.0, eps=eps, amsgrad=False, maximize=False)

    def step(self, grads):
        torch._foreach_add_(self.steps, 1)
        with torch.no_grad():
            torch._fused_adam_(
                self.params, list(grads), self.exp_avgs, self.exp_avg_sqs, [], self.steps, **self.settings
            )

    def keep(self, rows):
        self.params = [p.detach()[rows].requires_grad_() for p in self.params]
        self.exp_avgs = [m[rows] for m in self.exp_avgs]
        self.exp_avg_sqs = [v[rows] for v in self.exp_avg_sqs]


def param_shapes(sizes):
    """Per-network shapes [W0, b0, W1, b1, ...] of an MLP with layer widths `sizes`."""
    shapes = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        shapes += [(fan_in, fan_out), (fan_out,)]
    return shapes


def init_params(generators, shapes):
    """Parameters [W0, b0, W1, ...], each (B, size) with network b's values flattened in row b,
    zero-padded to a multiple of ALIGN (padding gets zero gradients, so it stays zero). Drawn on
    CPU as torch.nn.Linear's default init, one network after the other."""
    per_net = []
    for g in generators:
        net = []
        for fan_in, fan_out in shapes[::2]:
            bound = 1 / math.sqrt(fan_in)
            # Drawn as nn.Linear's (out, in) weight, stored transposed for h @ W.
            net.append(torch.empty(fan_out, fan_in).uniform_(-bound, bound, generator=g).T)
            net.append(torch.empty(fan_out).uniform_(-bound, bound, generator=g))
        per_net.append([p.flatten() for p in net])
    return [F.pad(torch.stack(rows), (0, -rows[0].numel() % ALIGN)) for rows in zip(*per_net)]


def views(params, shapes):
    """The layers [W0, b0, W1, ...], shaped (B, *shape), of the padded (B, size) parameters."""
    return [p[:, : math.prod(shape)].view(len(p), *shape) for p, shape in zip(params, shapes)]


def _check_data(x, target, w, init_seeds):
    x, w = np.asarray(x), np.asarray(w, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"x must be (networks, samples, features), got shape {x.shape}")
    shapes = [a.shape[:2] for a in target.arrays]
    if any(shape != x.shape[:2] for shape in shapes) or w.shape != x.shape[:2]:
        raise ValueError(f"targets {shapes} and w {w.shape} must all be {x.shape[:2]}, as x")
    if len(init_seeds) != x.shape[0]:
        raise ValueError(f"{len(init_seeds)} init seeds for {x.shape[0]} networks")
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("sample weights must be finite and non-negative")
    totals = w.sum(axis=1)
    if (totals == 0).any():
        raise ValueError(f"networks {np.flatnonzero(totals == 0).tolist()} have all-zero weights")
    # Mean weight 1 per network, so the learning rate means the same whatever the weights' scale.
    return x, (w / totals[:, None] * w.shape[1]).astype(np.float32)

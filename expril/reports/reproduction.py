"""Aggregation of the evaluation jobs' accuracies into the paper's Table 1, Table 2 and Figure 1."""

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # figures are written by batch jobs without a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from expril import io, settings  # noqa: E402
from expril.privacy import calibration, mechanisms, noise  # noqa: E402
from expril.reports import fidelity  # noqa: E402

LONG_COLUMNS = ["dataset", "seed", "method", "eps", "variant", "t", "accuracy"]
REFERENCE_METHODS = ["h_star", "h0_star"]
VARIANTS = ["C", "I"]


def long_table(accuracy, reference):
    """Every accuracy of every run in one tidy frame (method expril, h_star or h0_star)."""
    expril = accuracy.assign(method="expril")
    ref = reference.melt(
        id_vars=["dataset", "seed"], value_vars=REFERENCE_METHODS, var_name="method", value_name="accuracy"
    )
    long = pd.concat([expril, ref], ignore_index=True)[LONG_COLUMNS]
    long = long.astype({"eps": float, "t": "Int64", "accuracy": float})
    return long.sort_values(
        ["dataset", "method", "eps", "variant", "t", "seed"], kind="mergesort", na_position="last"
    ).reset_index(drop=True)


def method_label(eps, variant):
    """Table 2 name of ExPriL's variant at eps: 'C' without DP, '1DP-C' at eps = 1."""
    return variant if math.isinf(eps) else f"{settings.format_eps(eps)}DP-{variant}"


def _method_rank(method):
    """Paper's column order: h*, C, I, then finite eps ascending (C before I), h0*, ratio."""
    fixed = {"h_star": 0, "C": 1, "I": 2, "h0_star": 4, "ratio": 5}
    if method in fixed:
        return (fixed[method], 0.0, "")
    eps, variant = method.split("DP-")
    return (3, float(eps), variant)


def accuracy_stats(values):
    """Mean and sample std in percentage points, and the number of runs."""
    pct = 100 * np.asarray(values, dtype=float)
    std = pct.std(ddof=1) if len(pct) > 1 else np.nan
    return {"mean": pct.mean(), "std": std, "n_runs": len(pct)}


def table2(long, datasets, iterations):
    """Table 2 as a tidy frame: dataset, method, mean, std (accuracy %), n_runs.

    ExPriL enters with its final hypothesis h_T only. The ratio (h* - C)/h* uses the C run at the
    largest eps, i.e. C without DP whenever eps = inf was run.
    """
    final = long[(long.method == "expril") & (long.t == iterations)]
    rows = []
    for dataset in datasets:
        ours = final[final.dataset == dataset]
        for (eps, variant), group in ours.groupby(["eps", "variant"]):
            rows.append({"dataset": dataset, "method": method_label(eps, variant), **accuracy_stats(group.accuracy)})
        for method in REFERENCE_METHODS:
            ref = long[(long.dataset == dataset) & (long.method == method)]
            if len(ref):
                rows.append({"dataset": dataset, "method": method, **accuracy_stats(ref.accuracy)})
        c_runs = ours[ours.variant == "C"]
        h_star = long[(long.dataset == dataset) & (long.method == "h_star")].accuracy
        if len(c_runs) and len(h_star):
            c_best = c_runs[c_runs.eps == c_runs.eps.max()].accuracy
            ratio = (h_star.mean() - c_best.mean()) / h_star.mean()
            rows.append({"dataset": dataset, "method": "ratio", "mean": ratio, "std": np.nan, "n_runs": len(c_best)})
    t2 = pd.DataFrame(rows, columns=["dataset", "method", "mean", "std", "n_runs"])
    order = {name: i for i, name in enumerate(datasets)}
    t2 = t2.sort_values(
        ["dataset", "method"],
        kind="mergesort",
        key=lambda col: col.map(order) if col.name == "dataset" else col.map(_method_rank),
    )
    return t2.reset_index(drop=True)


def _header(method):
    return {"h_star": "ĥ*", "h0_star": "h0*", "ratio": "ratio"}.get(method, f"{method}-ExPriL")


def _ratio_text(value):
    """Paper's style: 0.1856 -> '1.9e-1'."""
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _cell(row):
    if row is None:
        return "n/a"
    if row["method"] == "ratio":
        return _ratio_text(row["mean"])
    if np.isnan(row["std"]):
        return f"{row['mean']:.1f}"
    return f"{row['mean']:.1f} ± {row['std']:.1f}"


def table2_markdown(t2):
    """Markdown laid out like the paper's Table 2, with a one-line caption."""
    methods = sorted(t2.method.unique(), key=_method_rank)
    lines = ["| Dataset | " + " | ".join(_header(m) for m in methods) + " |", "|" + "---|" * (len(methods) + 1)]
    for dataset, group in t2.groupby("dataset", sort=False):
        by_method = {row["method"]: row for _, row in group.iterrows()}
        cells = [_cell(by_method.get(m)) for m in methods]
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    runs = t2.n_runs
    n = f"{runs.min()}" if runs.min() == runs.max() else f"{runs.min()} to {runs.max()}"
    caption = (
        f"Table 2: test accuracy (%), mean ± std over {n} runs; "
        "ratio = (ĥ* - C-ExPriL)/ĥ*, C-ExPriL at the largest ε run (no DP if run)."
    )
    return "\n".join(lines) + "\n\n" + caption + "\n"


def _parameters(spec):
    """Table 1's generator description."""
    if spec["generator"] == "clusters":
        return f"{spec['clusters']} clusters, d_i = {spec['dim']}"
    if spec["generator"] == "latent":
        return f"d_l = {spec['latent_dim']}, d_i = {spec['dim']}"
    file = Path(spec["csv"]).stem if spec["generator"] == "csv" else spec["file"].split("/")[-1].split(".")[0]
    return f"{file}, shift on {spec['shift']}" if spec["shift"] else f"{file}, random split"


def table1(config):
    """Settings actually run, one row per configured dataset, with each eps's noise and bins."""
    rows = []
    for dataset in config["datasets"]:
        spec = config["benchmarks"][dataset]
        d = settings.feature_count(spec)
        queries = mechanisms.get(config["mechanism"]).n_queries(config["iterations"], spec["importance_sampling"])
        n_val = settings.benchmark_n_val(config, spec)
        row = {
            "dataset": dataset,
            "runs": config["runs"],
            "queries": queries,
            "is_step": "Yes" if spec["importance_sampling"] else "No",
            "n_source": spec["n_source"],
            "n_target": spec["n_target"],
            "n_val": n_val,
            "n_test": settings.benchmark_n_test(config, spec),
            "d": d,
            "parameters": _parameters(spec),
            "hidden": "[" + ",".join(str(h) for h in spec["hidden"]) + "]",
        }
        for eps in map(settings.parse_eps, config["epsilons"]):
            name = settings.format_eps(eps)
            row[f"lambda_eps{name}"] = calibration.laplace_scale(d, config["iterations"], eps)
            row[f"q_eps{name}"] = settings.bins_per_feature(
                n_val, d, config["iterations"], eps, config["bins"]["snr"], config["bins"]["noiseless"]
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _panel(ax, runs, h_star_mean, iterations):
    """Mean ± std over runs of acc(h_t) - mean acc(h*), per variant, in percentage points."""
    curves = runs.assign(gap=100 * (runs.accuracy - h_star_mean), method=runs.variant + "-ExPriL", t=runs.t.astype(int))
    sns.lineplot(
        data=curves,
        x="t",
        y="gap",
        hue="method",
        hue_order=[f"{v}-ExPriL" for v in VARIANTS],
        errorbar="sd",
        marker="o",
        ax=ax,
    )
    ax.axhline(0, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(iterations + 1))
    ax.set_xlabel("iteration t")
    ax.set_ylabel("acc(h_t) - acc(ĥ*) (% points)")
    ax.legend(fontsize="small")


def figure1(long, iterations, path_pdf, path_png, datasets=None):
    """Learning curves: one row per dataset, one column per eps (finite ascending, then no DP)."""
    expril = long[long.method == "expril"]
    datasets = list(datasets) if datasets is not None else list(expril.dataset.unique())
    eps_values = sorted(expril.eps.unique())  # inf sorts last: the no-DP column is rightmost
    fig, axes = plt.subplots(
        len(datasets),
        len(eps_values),
        squeeze=False,
        sharey="row",
        figsize=(4.5 * len(eps_values), 3.2 * len(datasets)),
    )
    for row, dataset in enumerate(datasets):
        h_star = long[(long.dataset == dataset) & (long.method == "h_star")].accuracy.mean()
        for col, eps in enumerate(eps_values):
            ax = axes[row, col]
            runs = expril[(expril.dataset == dataset) & (expril.eps == eps)]
            _panel(ax, runs, h_star, iterations)
            privacy = "no DP" if math.isinf(eps) else f"{settings.format_eps(eps)}-DP"
            ax.set_title(f"Dataset {dataset}, {privacy}")
    fig.tight_layout()
    save_figure(fig, path_pdf, path_png)


def save_figure(fig, path_pdf, path_png):
    """Write a figure as PDF (without a creation date, so the same results give the same file) and
    PNG, and close it."""
    for path, metadata in ((path_pdf, {"CreationDate": None}), (path_png, {})):
        with io.atomic_path(path) as tmp:
            fig.savefig(tmp, metadata=metadata)
    plt.close(fig)


def privacy_spent(ledger):
    """Per dataset, budget and mechanism: queries answered and (eps, delta) spent by each run, as
    its mechanism composes them (the largest over runs, which all follow the same plan)."""
    per_run = ledger.groupby(["dataset", "eps_budget", "mechanism", "seed"]).agg(
        queries=("query", "size"), eps_spent=("eps_total", "max"), delta_spent=("delta_total", "max")
    )
    return per_run.groupby(level=[0, 1, 2]).max().reset_index()


def privacy_markdown(spent):
    """The spend table; a δ column only where some mechanism spends one (pure-ε runs keep the
    paper's form)."""
    delta = bool((spent.delta_spent > 0).any())
    head = "| Dataset | mechanism | ε budget | queries | ε spent |" + (" δ spent |" if delta else "")
    lines = [
        "",
        "Privacy spent per run (from the oracle's ledgers, `privacy_ledger.csv`):",
        "",
        head,
        "|---|---|---|---|---|" + ("---|" if delta else ""),
    ]
    for row in spent.itertuples():
        lines.append(
            f"| {row.dataset} | {row.mechanism} | {settings.format_eps(row.eps_budget)} | "
            f"{row.queries} | {row.eps_spent:.6g} |" + (f" {row.delta_spent:.3g} |" if delta else "")
        )
    return "\n".join(lines) + "\n"


def demo_note(ledger):
    """A warning under the spend table where the public demo secret keyed a release's noise."""
    demo = int((ledger.noise_key == noise.KEYS["demo"]).sum())
    if not demo:
        return ""
    return (
        f"\n{demo} of the {len(ledger)} releases' noise was keyed by the public demo secret "
        f"(`{noise.SECRET_VARIABLE}` unset): anyone with the code can replay it. Fine for a reproduction; "
        "for real data, set a secret (docs/privacy.md, The noise secret).\n"
    )


def write_all(accuracy, reference, ledger, config, out, paper_table2=None):
    """Write the long table, Table 2 (CSV and Markdown, with the privacy spent per run), the
    privacy ledger, Table 1 and Figure 1 to `out`'s paths; given the paper's Table 2, also the
    comparison with the paper (fidelity.write)."""
    long = long_table(accuracy, reference)
    io.save_csv(out["accuracies"], long)
    t2 = table2(long, config["datasets"], config["iterations"])
    io.save_csv(out["table2_csv"], t2)
    io.save_csv(out["privacy_ledger"], ledger)
    io.save_text(out["table2_md"], table2_markdown(t2) + privacy_markdown(privacy_spent(ledger)) + demo_note(ledger))
    io.save_csv(out["table1"], table1(config))
    figure1(long, config["iterations"], out["figure_pdf"], out["figure_png"], datasets=config["datasets"])
    if paper_table2 is not None:
        fidelity.write(long, t2, paper_table2, config, out)


def _concat(files):
    return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)


def aggregate(accuracy_files, reference_files, ledger_files, paper_table2_file, config, out):
    """`write_all` from the workflow's per-block files. A chain's last ledger holds every earlier
    query of its runs: the rows shared by chains are dropped, and the rest sorted, so the ledger
    does not depend on how runs were grouped into seed blocks."""
    ledger = (
        _concat(ledger_files)
        .drop_duplicates()
        .sort_values(["dataset", "eps_budget", "seed", "query"], kind="stable", ignore_index=True)
    )
    write_all(_concat(accuracy_files), _concat(reference_files), ledger, config, out, pd.read_csv(paper_table2_file))

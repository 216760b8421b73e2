"""ExPriL against its rivals at equal privacy (docs/comparison.md): every run's accuracy, the
tidy comparison table with each method's privacy from the ledgers, paired tests against C-ExPriL,
the Markdown report and the privacy-utility figure."""

import math

import numpy as np
import pandas as pd
import seaborn as sns
from scipy import stats

from expril import io, settings
from expril.privacy import ledger
from expril.reports import reproduction

NAMES = {
    "C": "C-ExPriL",
    "I": "I-ExPriL",
    "llp": "LLP",
    "dpsgd": "DP-SGD",
    "aim": "AIM",
    "dpmerf": "DP-MERF",
    "C-mmd": "C-ExPriL (MMD)",
    "I-mmd": "I-ExPriL (MMD)",
    "h_star": "ĥ*",
    "h0_star": "h0*",
}
REFERENCES = ["h_star", "h0_star"]
# The curator's rules that write ledgers, and the method each accounts for (ExPriL: both variants).
LEDGER_METHODS = {
    "oracle_marginals": ["C", "I"],
    "oracle_errors": ["C", "I"],
    "oracle_proportions": ["llp"],
    "train_dpsgd": ["dpsgd"],
    "aim_release": ["aim"],
    "dpmerf_release": ["dpmerf"],
}
# ExPriL's runs with Pb. 1 by MMD (docs/synthetic.md) have their own files and ledgers.
MMD = {"C": "C-mmd", "I": "I-mmd"}
RUN_COLUMNS = ["dataset", "seed", "method", "eps", "accuracy"]
TABLE_COLUMNS = ["dataset", "method", "eps", "eps_spent", "delta", "neighbours", "mechanisms", "mean", "std", "n_runs"]
LEVEL = 0.05


def runs_table(expril, rivals, reference, methods, iterations, expril_mmd=None):
    """Every run's accuracy per dataset, method and eps: ExPriL's final hypothesis h_T (`expril`,
    its evaluation rows for every variant and t; `expril_mmd`, the same with Pb. 1 by MMD), the
    rivals', and h*, h0* as eps = inf references."""
    expril = expril[expril.t == iterations].assign(method=lambda f: f.variant)
    if expril_mmd is not None:
        mmd = expril_mmd[expril_mmd.t == iterations]
        expril = pd.concat([expril, mmd.assign(method=mmd.variant.map(MMD))], ignore_index=True)
    ref = reference.melt(
        id_vars=["dataset", "seed"], value_vars=REFERENCES, var_name="method", value_name="accuracy"
    ).assign(eps=math.inf)
    runs = pd.concat([expril, rivals, ref], ignore_index=True)[RUN_COLUMNS]
    runs = runs[runs.method.isin([*methods, *REFERENCES])].astype({"eps": float, "accuracy": float})
    order = {m: i for i, m in enumerate([*methods, *REFERENCES])}
    return runs.sort_values(
        ["dataset", "method", "eps", "seed"],
        key=lambda c: c.map(order) if c.name == "method" else c,
        kind="mergesort",
        ignore_index=True,
    )


def _joined(values):
    return "; ".join(sorted(set(values)))


def privacy(book, methods=None):
    """Per dataset, method and eps budget: the largest eps and delta a run spent in total, as its
    mechanism composes them, the neighbour relation and the mechanisms that spent it (AIM's or
    MST's, say). A ledger's rows account for the methods
    LEDGER_METHODS gives their rule, or for `methods` (ExPriL's runs with Pb. 1 by MMD)."""
    method = (
        book.rule.map(LEDGER_METHODS)
        if methods is None
        else pd.Series([methods] * len(book), book.index, dtype=object)
    )
    rows = book.assign(method=method).explode("method")
    per_run = rows.groupby(["dataset", "method", "eps_budget", "seed"]).agg(
        eps_spent=("eps_total", "max"),
        delta=("delta_total", "max"),
        neighbours=("neighbours", _joined),
        mechanisms=("mechanism", _joined),
    )
    spent = per_run.groupby(level=[0, 1, 2]).agg(
        eps_spent=("eps_spent", "max"),
        delta=("delta", "max"),
        neighbours=("neighbours", "first"),
        mechanisms=("mechanisms", _joined),
    )
    return spent.reset_index().rename(columns={"eps_budget": "eps"})


def comparison_table(runs, spent):
    """Tidy: dataset, method, eps, eps and delta spent, neighbour relation, mean, std (accuracy %),
    n_runs. The references, non-private, spend nothing."""
    table = (
        runs.groupby(["dataset", "method", "eps"], sort=False)
        .accuracy.apply(lambda a: pd.Series(reproduction.accuracy_stats(a)))
        .unstack()
        .reset_index()
    )
    table = table.merge(spent, on=["dataset", "method", "eps"], how="left")
    ref = table.method.isin(REFERENCES)
    table.loc[ref, ["eps_spent", "delta", "neighbours", "mechanisms"]] = [
        0.0,
        0.0,
        "none (non-private reference)",
        "none",
    ]
    return table.astype({"n_runs": int})[TABLE_COLUMNS]


def paired_tests(runs, baseline="C"):
    """Each method against `baseline` at the same dataset and eps, paired by run: the mean
    difference (method - baseline, points), a two-sided Wilcoxon signed-rank p-value and the
    verdict for the baseline at level 0.05 (uncorrected)."""
    rows = []
    base = runs[runs.method == baseline].set_index(["dataset", "eps", "seed"]).accuracy
    for (dataset, method, eps), group in runs[~runs.method.isin([baseline, *REFERENCES])].groupby(
        ["dataset", "method", "eps"], sort=False
    ):
        pairs = (
            group.set_index(["dataset", "eps", "seed"])
            .accuracy.to_frame("other")
            .join(base.rename("base"), how="inner")
        )
        if pairs.empty:
            continue
        difference = 100 * (pairs.other - pairs.base)
        p = 1.0 if (difference == 0).all() else stats.wilcoxon(pairs.other, pairs.base).pvalue
        verdict = (
            "no significant difference"
            if not p < LEVEL
            else f"{NAMES[baseline]} {'loses' if difference.mean() > 0 else 'wins'}"
        )
        rows.append(
            {
                "dataset": dataset,
                "eps": eps,
                "method": method,
                "n_pairs": len(pairs),
                "difference": difference.mean(),
                "p_value": p,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(rows, columns=["dataset", "eps", "method", "n_pairs", "difference", "p_value", "verdict"])


def leaders(table, methods):
    """Per dataset and eps, the compared method(s) with the highest mean accuracy, and that mean."""
    compared = table[table.method.isin(methods)]
    best = compared[compared["mean"] == compared.groupby(["dataset", "eps"])["mean"].transform("max")]
    return best.groupby(["dataset", "eps"], sort=False).agg(
        methods=("method", lambda m: ", ".join(NAMES[x] for x in m)), mean=("mean", "first")
    )


def _eps_text(eps):
    return "∞" if math.isinf(eps) else settings.format_eps(eps)


def _cell(row, marks):
    if row is None:
        return "n/a"
    text = f"{row['mean']:.1f}" if np.isnan(row["std"]) else f"{row['mean']:.1f} ± {row['std']:.1f}"
    return text + marks.get((row["dataset"], row["eps"], row["method"]), "")


def markdown(table, tests, methods, datasets):
    """The comparison as Markdown: accuracy per dataset and eps, each method marked against
    C-ExPriL; the references; the privacy each method spent; the tests; a caption."""
    marks = {
        (t.dataset, t.eps, t.method): " ▲" if t.verdict.endswith("loses") else " ▼"
        for t in tests.itertuples()
        if not t.verdict.startswith("no")
    }
    cells = {(r["dataset"], r["eps"], r["method"]): r for _, r in table.iterrows()}
    shown = [d for d in datasets if d in set(table.dataset)]
    lines = ["| Dataset | ε | " + " | ".join(NAMES[m] for m in methods) + " |", "|---|---|" + "---|" * len(methods)]
    for dataset in shown:
        for eps in sorted(table[(table.dataset == dataset) & ~table.method.isin(REFERENCES)].eps.unique()):
            lines.append(
                f"| {dataset} | {_eps_text(eps)} | "
                + " | ".join(_cell(cells.get((dataset, eps, m)), marks) for m in methods)
                + " |"
            )
    runs = table.n_runs
    n = f"{runs.min()}" if runs.min() == runs.max() else f"{runs.min()} to {runs.max()}"
    lines += [
        "",
        f"Test accuracy (%), mean ± std over {n} runs, at equal privacy budget ε per run. "
        f"▲ / ▼: significantly above / below C-ExPriL at the same dataset and ε (two-sided Wilcoxon "
        f"signed-rank test, paired by run, p < {LEVEL}, not corrected for the {len(tests)} tests).",
        "",
        "| Dataset | ĥ* | h0* |",
        "|---|---|---|",
    ]
    for dataset in shown:
        lines.append(
            f"| {dataset} | " + " | ".join(_cell(cells.get((dataset, math.inf, m)), {}) for m in REFERENCES) + " |"
        )
    lines += [
        "",
        "Non-private references: ĥ* trained on the curator's validation split with its labels, h0* its majority class.",
    ]
    top = leaders(table, methods)
    eps_values = sorted(top.index.get_level_values("eps").unique())
    lines += [
        "",
        "Highest mean per dataset and ε (ties listed):",
        "",
        "| Dataset | " + " | ".join(_eps_text(e) for e in eps_values) + " |",
        "|---|" + "---|" * len(eps_values),
    ]
    for dataset in shown:
        lines.append(
            f"| {dataset} | "
            + " | ".join(
                f"{top.loc[(dataset, e), 'methods']} ({top.loc[(dataset, e), 'mean']:.1f})"
                if (dataset, e) in top.index
                else "n/a"
                for e in eps_values
            )
            + " |"
        )
    lines += [
        "",
        "Privacy spent per run, from the ledgers (largest over datasets and runs):",
        "",
        "| method | mechanisms | neighbours | ε budget | ε spent | δ spent |",
        "|---|---|---|---|---|---|",
    ]
    private = table[~table.method.isin(REFERENCES)]
    for (method, eps), group in private.groupby(["method", "eps"], sort=False):
        lines.append(
            f"| {NAMES[method]} | {group.mechanisms.iloc[0]} | {group.neighbours.iloc[0]} | {_eps_text(eps)} | "
            f"{group.eps_spent.max():.4g} | {group.delta.max():.3g} |"
        )
    lines += [
        "",
        "Paired tests against C-ExPriL (difference: method − C-ExPriL, points):",
        "",
        "| Dataset | ε | method | runs | difference | p | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in tests.itertuples():
        lines.append(
            f"| {t.dataset} | {_eps_text(t.eps)} | {NAMES[t.method]} | {t.n_pairs} | {t.difference:+.1f} | "
            f"{t.p_value:.2g} | {t.verdict} |"
        )
    return "\n".join(lines) + "\n"


def _positions(eps_values):
    """x positions on a log axis: each finite eps at itself, eps = inf one step (x3) beyond the
    largest (at 1 if none is finite)."""
    finite = [e for e in eps_values if math.isfinite(e)]
    beyond = 3 * max(finite) if finite else 1.0
    return {e: e if math.isfinite(e) else beyond for e in eps_values}


def figure(runs, methods, datasets, path_pdf, path_png):
    """Accuracy against eps, one panel per dataset: one line per method, mean ± one std over runs
    (seaborn's band), h* and h0* as horizontal reference lines."""
    import matplotlib.pyplot as plt  # after expril.reports.reproduction's import, which selects the Agg backend

    shown = [d for d in datasets if d in set(runs.dataset)]
    compared = runs[runs.method.isin(methods)]
    position = _positions(sorted(compared.eps.unique()))
    data = compared.assign(
        x=compared.eps.map(position), accuracy=100 * compared.accuracy, method=compared.method.map(NAMES)
    )
    cols = min(4, len(shown))
    rows = -(-len(shown) // cols)
    fig, axes = plt.subplots(rows, cols, squeeze=False, figsize=(4.2 * cols, 3.4 * rows))
    legend = {}  # label: handle, one legend for all panels
    for ax, dataset in zip(axes.flat, shown):
        sns.lineplot(
            data=data[data.dataset == dataset],
            x="x",
            y="accuracy",
            hue="method",
            hue_order=[NAMES[m] for m in methods],
            errorbar="sd",
            marker="o",
            ax=ax,
        )
        for method, style in zip(REFERENCES, ("--", ":")):
            reference = runs[(runs.dataset == dataset) & (runs.method == method)].accuracy
            ax.axhline(100 * reference.mean(), color="black", linestyle=style, linewidth=0.9, label=NAMES[method])
        ax.set_xscale("log")
        ax.set_xticks(list(position.values()), [_eps_text(e) for e in position])
        ax.minorticks_off()
        ax.set(title=f"Dataset {dataset}", xlabel="ε (per run)", ylabel="test accuracy (%)")
        legend.update(zip(*reversed(ax.get_legend_handles_labels())))
        ax.get_legend().remove()
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=len(legend), frameon=False)
    fig.tight_layout(rect=(0, 0.3 / (3.4 * rows), 1, 1))
    reproduction.save_figure(fig, path_pdf, path_png)


def _concat(files, columns=()):
    return pd.concat([pd.DataFrame(columns=list(columns)), *(pd.read_csv(f) for f in files)], ignore_index=True)


def history_note(history):
    """What the splits' histories add to the ledgers: releases drawn more than once (a rerun of a
    release whose noise cannot be replayed) and the eps they spent together."""
    if history.empty:
        return ""
    again = history[history.releases > 1]
    text = f"\nAIM's releases, reruns included (the splits' append-only histories): {history.releases.sum()} on "
    text += f"{len(history)} (split, ε) pairs"
    if again.empty:
        return text + ", each drawn once: every split spent its ε once.\n"
    worst = again.loc[(again.eps / again.eps_budget).idxmax()]
    return text + (
        f"; {len(again)} pairs were drawn more than once, so their split spent more than its ε: at most "
        f"{worst.releases} releases, ε {worst.eps:.4g} in all against a budget of {worst.eps_budget:.4g} "
        f"({worst.dataset}, seed {worst.seed}). The tables use the last release.\n"
    )


def compare(
    expril_files,
    rival_files,
    reference_files,
    ledger_files,
    methods,
    datasets,
    iterations,
    out,
    mmd_files=(),
    mmd_ledger_files=(),
    aim_histories=(),
):
    """Write every run's accuracy, the comparison table (CSV, Markdown), the paired tests and the
    privacy-utility figure to `out`'s paths, from the workflow's per-block files (`expril_files`:
    ExPriL's evaluations, none if no variant is compared; `mmd_files`, `mmd_ledger_files`: those
    of its runs with Pb. 1 by MMD; `aim_histories`: the splits' append-only AIM histories)."""
    columns = ["dataset", "seed", "eps", "variant", "t", "accuracy"]
    expril = _concat(expril_files, columns)
    runs = runs_table(
        expril,
        _concat(rival_files, RUN_COLUMNS),
        _concat(reference_files),
        methods,
        iterations,
        _concat(mmd_files, columns),
    )
    ledgers = [_concat(ledger_files).drop_duplicates()]
    spent = [privacy(ledgers[0])]
    if mmd_ledger_files:
        ledgers.append(_concat(mmd_ledger_files).drop_duplicates())
        spent.append(privacy(ledgers[1], [m for m in MMD.values() if m in methods]))
    table = comparison_table(runs, pd.concat(spent, ignore_index=True))
    tests = paired_tests(runs)
    io.save_csv(out["runs"], runs)
    io.save_csv(out["comparison_csv"], table)
    io.save_csv(out["tests"], tests)
    note = reproduction.demo_note(pd.concat(ledgers, ignore_index=True)) + history_note(
        ledger.history_spent(aim_histories)
    )
    io.save_text(out["comparison_md"], markdown(table, tests, methods, datasets) + note)
    figure(runs, methods, datasets, out["figure_pdf"], out["figure_png"])

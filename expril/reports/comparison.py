"""ExPriL against its rivals at equal privacy (docs/comparison.md): every run's accuracy, the tidy
comparison table with each method's privacy from its ledgers, tuned and as configured; collapsed
cells flagged; at finite eps, paired tests against C-ExPriL with Holm's correction, Friedman tests
and critical-difference diagrams (expril.reports.statistics), on counts of correct test records;
the Markdown report and the figures."""

import math

import numpy as np
import pandas as pd
import seaborn as sns

from expril import io, settings
from expril.plugins import registry
from expril.privacy import ledger
from expril.reports import published, reproduction, statistics
from expril.workflow.currency import check_ledgers, named

# Each method's name in the report: ExPriL's, those the plug-in methods report (expril/plugins/), the
# references'.
NAMES = {
    "C": "C-ExPriL",
    "I": "I-ExPriL",
    "h_star": "ĥ*",
    "h0_star": "h0*",
} | {name: display for method in registry.methods().values() for name, display in method.reports.items()}
REFERENCES = list(published.REFERENCES)
# ExPriL's methods: the variant of the chain's evaluation rows each reads.
VARIANTS = {"C": "C", "I": "I"}
# The compared methods a plug-in reports that repeat another's runs on some datasets (Method.bases,
# Method.repeats_on), and the method each repeats: tied by construction there (plain_repeats), they
# are neither ranked (they would count twice) nor tested.
BASES = {name: b for method in registry.methods().values() for name, b in method.bases.items()}
UNRANKED = set(BASES)
# What the report says of them (Method.repeats_note, Method.own_runs_note).
REPEATS_NOTES = "".join(f"; {m.repeats_note}, not ranked" for m in registry.methods().values() if m.repeats_note)
OWN_RUNS_NOTES = "".join(f" ({m.own_runs_note})" for m in registry.methods().values() if m.own_runs_note)
# The study's columns: the settings chosen on calibration runs, and as configured (sensitivity).
TUNED, CONFIGURED = "tuned", "as configured"
RUN_COLUMNS = ["dataset", "seed", "method", "eps", "column", "setting", "accuracy", "positive_share"]
TABLE_COLUMNS = [
    "dataset",
    "method",
    "eps",
    "column",
    "setting",
    "eps_spent",
    "delta",
    "neighbours",
    "mechanisms",
    "mean",
    "std",
    "n_runs",
    "collapsed_runs",
    "collapsed",
]
LEVEL = 0.05
# A run has collapsed when its network labels at least this share of the test records alike; a
# cell is flagged when at least half of its runs did (docs/comparison.md, "Collapsed cells").
COLLAPSED_SHARE = 0.99


def read_runs(runs, iterations):
    """Every run's accuracy and positive share, from `runs` (dicts: method, dataset, eps, column,
    setting, evaluation, and `iterations` where an ExPriL run's setting sets another T than
    `iterations`, the configured): ExPriL's final hypothesis h_T, or a rival's network."""
    files, frames = {}, []
    for run in runs:
        if run["evaluation"] not in files:
            files[run["evaluation"]] = pd.read_csv(run["evaluation"])
        rows = files[run["evaluation"]]
        if "variant" in rows:  # ExPriL's chain's (the method's, or the one its runs repeat): its h_T
            last = run.get("iterations", iterations)
            rows = rows[(rows.variant == VARIANTS[BASES.get(run["method"], run["method"])]) & (rows.t == last)]
        frames.append(
            rows.assign(
                method=run["method"],
                eps=float(run["eps"]),
                column=run["column"],
                setting=run["setting"] or "configured",
            )[RUN_COLUMNS]
        )
    # none: a currency in which no configured method runs (a user's method in one currency only)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=RUN_COLUMNS)


def reference_runs(files):
    """h* and h0* of every run, as eps = inf references."""
    reference = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    return reference.melt(
        id_vars=["dataset", "seed"], value_vars=REFERENCES, var_name="method", value_name="accuracy"
    ).assign(eps=math.inf, column="reference", setting="", positive_share=np.nan)[RUN_COLUMNS]


def counted(runs, designs):
    """`runs` with each run's test split size and count of correct test records, the resolution
    every comparison is made at (statistics.correct): equal results compare equal."""
    n_test = runs.dataset.map(lambda dataset: designs[dataset].n_test)
    return runs.assign(n_test=n_test, correct=statistics.correct(runs.accuracy, n_test))


def contested(frame):
    """`frame`'s rows at finite eps. eps = inf adds no noise: a non-private reference, as ĥ* and h0*
    are, it stays in the tables but enters no test, rank or leader count."""
    return frame[np.isfinite(frame.eps)]


def _joined(values):
    return "; ".join(sorted(set(values)))


def privacy(runs, currency=None):
    """Per dataset, method, eps budget and column: the largest eps and delta a run spent in total, as
    its mechanism composes them, the neighbour relation and the mechanisms that spent it, from the
    ledger of each run's last release (which holds its earlier ones), and the rows. At eps = inf no
    noise is drawn and a run may be another currency's (currency.home): its mechanisms are named as
    `currency` (the table's) names them (currency.named)."""
    books = {}
    frames = []
    for run in runs:
        if run["ledger"] not in books:
            books[run["ledger"]] = pd.read_csv(run["ledger"])
        frames.append(
            books[run["ledger"]].assign(
                method=run["method"], column=run["column"], eps=float(run["eps"]), ledger=run["ledger"]
            )
        )
    # none: a currency in which no configured method runs, its table the published study's alone
    rows = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=[*ledger.COLUMNS, "method", "column", "eps", "ledger"])
    )
    labelled = rows
    if currency is not None:
        labelled = rows.assign(
            mechanism=[
                named(currency, method, m) if math.isinf(eps) else m
                for method, m, eps in zip(rows.method, rows.mechanism, rows.eps.astype(float))
            ]
        )
    per_run = labelled.groupby(["dataset", "method", "eps_budget", "column", "seed"]).agg(
        eps_spent=("eps_total", "max"),
        delta=("delta_total", "max"),
        neighbours=("neighbours", _joined),
        mechanisms=("mechanism", _joined),
    )
    spent = per_run.groupby(level=[0, 1, 2, 3]).agg(
        eps_spent=("eps_spent", "max"),
        delta=("delta", "max"),
        neighbours=("neighbours", _joined),
        mechanisms=("mechanisms", _joined),
    )
    return spent.reset_index().rename(columns={"eps_budget": "eps"}), rows


def collapsed(positive_share):
    """Whether a run's network labels (nearly) every test record alike."""
    return (positive_share >= COLLAPSED_SHARE) | (positive_share <= 1 - COLLAPSED_SHARE)


def plain_repeats(runs):
    """The (dataset, method) pairs where a method of BASES has the runs of the method it builds on
    (where its plug-in repeats it: Method.repeats_on)."""
    key = ["eps", "column", "seed"]
    repeats = set()
    for (dataset, method), group in runs[runs.method.isin(UNRANKED)].groupby(["dataset", "method"]):
        plain = runs[(runs.dataset == dataset) & (runs.method == BASES[method])]
        if group.set_index(key).accuracy.sort_index().equals(plain.set_index(key).accuracy.sort_index()):
            repeats.add((dataset, method))
    return repeats


def without(frame, pairs):
    """`frame`'s rows whose (dataset, method) is not in `pairs`."""
    return frame[[pair not in pairs for pair in zip(frame.dataset, frame.method)]]


def comparison_table(runs, spent):
    """Tidy: dataset, method, eps, column, the setting, eps and delta spent, neighbour relation,
    mechanisms, mean and std (accuracy %), n_runs, the runs that collapsed to one class and whether
    at least half did. The references spend nothing. `runs`: counted()."""
    grouped = runs.assign(collapsed_run=collapsed(runs.positive_share), percent=100 * runs.accuracy).groupby(
        ["dataset", "method", "eps", "column"], sort=False
    )
    table = grouped.agg(
        correct=("correct", "sum"),
        n_test=("n_test", "first"),
        std=("percent", "std"),
        n_runs=("percent", "size"),
        setting=("setting", _joined),
        collapsed_runs=("collapsed_run", "sum"),
    ).reset_index()
    # One division of whole numbers: cells whose runs got as many test records right tie exactly.
    table["mean"] = 100 * table.correct / (table.n_runs * table.n_test)
    table["collapsed"] = table.collapsed_runs >= table.n_runs / 2
    table = table.merge(spent, on=["dataset", "method", "eps", "column"], how="left")
    ref = table.method.isin(REFERENCES)
    table.loc[ref, ["eps_spent", "delta", "neighbours", "mechanisms"]] = [
        0.0,
        0.0,
        "none (non-private reference)",
        "none",
    ]
    return table.astype({"n_runs": int, "collapsed_runs": int})[TABLE_COLUMNS]


def paired_test(other, base, design):
    """The paired test that fits how a dataset's runs are drawn (docs/comparison.md, "Statistics"),
    on counts of correct records: its name and two-sided p. Runs that resample one record pool
    overlap, so their results correlate: Nadeau and Bengio's corrected resampled t-test allows for
    it. Runs on fresh data are independent: Wilcoxon's signed-rank test, which needs no normality."""
    if design.resampled:
        return "corrected resampled t", statistics.corrected_t(other, base, design.n_train, design.n_test)
    return "Wilcoxon signed-rank", statistics.wilcoxon(other, base)


def paired_tests(runs, column, designs, baseline="C", cells=contested):
    """Each method against `baseline` at the same dataset and finite eps (`cells`: the rows tested),
    in one column, paired by run (`runs`: counted()): the mean difference (method - baseline,
    points), the test made (paired_test(), by the dataset's design.Design in `designs`), its two-sided
    p, its Holm adjustment over every test of the column, and the verdict at level 0.05. Not tested:
    a method whose runs are the baseline's, and a method of BASES where it repeats its base."""
    runs = runs[runs.column == column]
    repeats = plain_repeats(runs)
    runs = cells(runs)
    base = runs[runs.method == baseline].set_index(["dataset", "eps", "seed"]).correct
    rows = []
    for (dataset, method, eps), group in runs[runs.method != baseline].groupby(
        ["dataset", "method", "eps"], sort=False
    ):
        pairs = (
            group.set_index(["dataset", "eps", "seed"]).correct.to_frame("other").join(base.rename("base"), how="inner")
        )
        if pairs.empty or (pairs.other == pairs.base).all() or (dataset, method) in repeats:
            continue
        test, p = paired_test(pairs.other, pairs.base, designs[dataset])
        rows.append(
            {
                "dataset": dataset,
                "eps": eps,
                "method": method,
                "n_pairs": len(pairs),
                "difference": 100 * (pairs.other - pairs.base).mean() / designs[dataset].n_test,
                "test": test,
                "p_value": p,
            }
        )
    tests = pd.DataFrame(rows, columns=["dataset", "eps", "method", "n_pairs", "difference", "test", "p_value"])
    tests["p_holm"] = statistics.holm(tests.p_value) if len(tests) else []
    verdicts = {"": "no significant difference", "▲": f"{NAMES[baseline]} loses", "▼": f"{NAMES[baseline]} wins"}
    tests["verdict"] = [verdicts[mark] for mark in _marks(tests)]
    return tests


def _marks(tests):
    """Each paired test's mark: ▲ / ▼ the method significantly above / below the baseline
    (C-ExPriL), else ''."""
    return ["" if not p < LEVEL else "▲" if d > 0 else "▼" for p, d in zip(tests.p_holm, tests.difference)]


# ExPriL's rivals: the methods that are not ExPriL, nor built on it as those that repeat it are
# (a leader's ★ needs each significantly below).
RIVALS = set(NAMES) - set(VARIANTS) - set(REFERENCES) - UNRANKED


def rankings(table, methods, column):
    """Per finite eps, over the datasets where every method ran: the methods' average ranks by mean
    accuracy, the Friedman test and Nemenyi's critical difference (expril.reports.statistics);
    UNRANKED left out."""
    methods = [m for m in methods if m not in UNRANKED]
    rows, ranks = [], {}
    cells = contested(table[(table.column == column) & table.method.isin(methods)])
    for eps, group in cells.groupby("eps", sort=True):
        means = group.pivot(index="dataset", columns="method", values="mean")[methods].dropna()
        if len(means) < 2 or len(methods) < 3:
            continue
        ranks[eps] = statistics.average_ranks(means)
        cd = statistics.critical_difference(len(methods), len(means))
        rows.append(
            {
                "eps": eps,
                "datasets": len(means),
                **statistics.friedman(means),
                "cd": cd,
                **{f"rank_{m}": ranks[eps][m] for m in methods},
            }
        )
    return pd.DataFrame(rows), ranks


def leaders(table, methods, column, tests, cells=contested):
    """Per dataset and finite eps (`cells`: the rows contested), the compared method(s) with the
    highest mean accuracy, that mean, and its mark from the paired tests (`tests`, of `column`): ▲ a
    leader significantly above C-ExPriL, ★ C-ExPriL leads and every rival present is significantly
    below it, else none."""
    compared = cells(table[table.method.isin(methods) & (table.column == column)])
    best = compared[compared["mean"] == compared.groupby(["dataset", "eps"])["mean"].transform("max")]
    top = best.groupby(["dataset", "eps"], sort=False).agg(
        leading=("method", list),
        mean=("mean", "first"),
        collapsed=("collapsed", "all"),
    )
    against_c = {(t.dataset, t.eps, t.method): mark for t, mark in zip(tests.itertuples(), _marks(tests))}
    present = compared.groupby(["dataset", "eps"]).method.agg(set)

    def mark(cell, leading):
        if any(against_c.get((*cell, m)) == "▲" for m in leading):
            return "▲"
        rivals = present[cell] & RIVALS
        if "C" in leading and rivals and all(against_c.get((*cell, m)) == "▼" for m in rivals):
            return "★"
        return ""

    top["mark"] = [mark(cell, leading) for cell, leading in top.leading.items()]
    top["methods"] = [", ".join(NAMES[m] for m in leading) for leading in top.leading]
    return top.drop(columns="leading")[["methods", "mean", "collapsed", "mark"]]


def tuning_effect(table, methods):
    """What tuning changed, per method and eps over the datasets that have both columns: the mean
    of tuned minus as configured (points), how many datasets it raised, and the collapsed cells
    in each column."""
    cells = table[table.method.isin(methods) & table.column.isin([TUNED, CONFIGURED])]
    wide = cells.pivot_table(
        index=["method", "eps", "dataset"], columns="column", values=["mean", "collapsed"]
    ).dropna()
    change = wide["mean"][TUNED] - wide["mean"][CONFIGURED]
    frame = pd.DataFrame(
        {
            "change": change,
            "raised": change > 0,
            "collapsed_configured": wide["collapsed"][CONFIGURED].astype(bool),
            "collapsed_tuned": wide["collapsed"][TUNED].astype(bool),
        }
    )
    effect = frame.groupby(["method", "eps"]).agg(
        datasets=("change", "size"),
        change=("change", "mean"),
        raised=("raised", "sum"),
        collapsed_configured=("collapsed_configured", "sum"),
        collapsed_tuned=("collapsed_tuned", "sum"),
    )
    order = {m: i for i, m in enumerate(methods)}
    return effect.reset_index().sort_values(["method", "eps"], key=lambda c: c.map(order) if c.name == "method" else c)


def eps_text(eps):
    return "∞" if math.isinf(eps) else settings.format_eps(eps)


def _cell(row, marks=None):
    if row is None:
        return "n/a"
    text = f"{row['mean']:.1f}" if np.isnan(row["std"]) else f"{row['mean']:.1f} ± {row['std']:.1f}"
    text += (marks or {}).get((row["dataset"], row["eps"], row["method"]), "")
    return text + (f" ⊘{row['collapsed_runs']}" if row["collapsed"] else "")


def _grid(table, tests, methods, datasets, column, caption):
    """One column's accuracy table, every method marked against C-ExPriL."""
    marks = {(t.dataset, t.eps, t.method): f" {mark}" for t, mark in zip(tests.itertuples(), _marks(tests)) if mark}
    cells = {(r["dataset"], r["eps"], r["method"]): r for _, r in table[table.column == column].iterrows()}
    lines = [
        f"**{caption}**",
        "",
        "| Dataset | ε | " + " | ".join(NAMES[m] for m in methods) + " |",
        "|---|---|" + "---|" * len(methods),
    ]
    for dataset in datasets:
        for eps in sorted({e for d, e, _ in cells if d == dataset}):
            lines.append(
                f"| {dataset} | {eps_text(eps)} | "
                + " | ".join(_cell(cells.get((dataset, eps, m)), marks) for m in methods)
                + " |"
            )
    return lines


def title(currency):
    """A currency's table title: its (eps, delta), neighbour relation and name."""
    return f"{currency.describe()}: currency `{currency.name}`"


def heading(currency, methods):
    """A currency's section heading: its title() and what each method spends in it."""
    spends = ", ".join(f"{NAMES[m]} `{currency.mechanisms[m]}`" for m in methods if m in currency.mechanisms)
    return [
        f"## {title(currency)}",
        "",
        f"Every method of this section spends at most the same ε per run and δ = {currency.delta:g}, under "
        f"{currency.relation} neighbours; every ledger row of its runs was checked to agree. Mechanisms: "
        f"{spends}.",
        "",
    ]


def markdown(table, tests, ranking, methods, datasets, primary, repeats=frozenset(), transferred=(), currency=None):
    """The comparison as Markdown: the currency's heading, the primary column's accuracy table
    (tuned where a choice exists) with its marks, the other column, the settings chosen, the
    references, the leaders, the privacy each method spent, the rank tests and the paired tests.
    `repeats`: plain_repeats(), left out of the leaders (where they would only tie) and of the
    tuning's effect; `transferred`: the datasets whose tuned settings were transferred
    (Design.transferred)."""
    shown = [d for d in datasets if d in set(table.dataset)]
    runs = table[table.column == primary].n_runs
    n = f"{runs.min()}" if runs.min() == runs.max() else f"{runs.min()} to {runs.max()}"
    lines = heading(currency, methods) if currency else []
    lines += _grid(
        table,
        tests,
        methods,
        shown,
        primary,
        f"{primary.capitalize()}: test accuracy (%), mean ± std over {n} runs, at equal privacy budget ε per run",
    )
    lines += [
        "",
        f"▲ / ▼: significantly above / below C-ExPriL at the same dataset and ε (paired by run on the counts "
        f"of correct test records, Holm-adjusted p < {LEVEL} over the {len(tests)} tests of this table). ε = ∞ "
        "adds no noise: its rows are non-private references, as ĥ* and h0* are, and enter no test, rank or "
        f"count of leaders. ⊘k: k runs' networks label {COLLAPSED_SHARE:.0%} or more of the test records alike, "
        "at least half of the cell's runs: the cell measures a collapsed classifier, not the method's accuracy.",
    ]
    if primary == TUNED:
        transferred = [d for d in shown if d in transferred]
        lines += [
            "",
            "Tuned settings: chosen on calibration runs whose records no reported run holds (other seeds of the "
            "datasets that draw fresh data, or of a table's part held out for them)"
            + (
                f"; on {', '.join(transferred)}, whose runs resample one record pool, each method's setting "
                "transferred by its average rank over those datasets' calibration at the same ε (docs/comparison.md, "
                '"Tuning"), so no record of theirs reaches the choice.'
                if transferred
                else "."
            ),
        ]
    others = [c for c in (TUNED, CONFIGURED) if c != primary and c in set(table.column)]
    for other in others:
        lines += [
            "",
            *_grid(
                table,
                tests.iloc[0:0],
                methods,
                shown,
                other,
                f"{other.capitalize()} (sensitivity, untested): test accuracy (%)",
            ),
        ]
    if primary == TUNED:
        chosen = table[(table.column == TUNED) & ~table.method.isin(REFERENCES)]
        lines += [
            "",
            "**Settings chosen on the calibration runs** (`snakemake tune`, docs/comparison.md; `configured`: as "
            "configured):",
            "",
            "| Dataset | ε | " + " | ".join(NAMES[m] for m in methods) + " |",
            "|---|---|" + "---|" * len(methods),
        ]
        settings_of = {(r.dataset, r.eps, r.method): r.setting for r in chosen.itertuples()}
        for dataset in shown:
            for eps in sorted({e for d, e, _ in settings_of if d == dataset}):
                lines.append(
                    f"| {dataset} | {eps_text(eps)} | "
                    + " | ".join(f"`{settings_of.get((dataset, eps, m), 'n/a')}`" for m in methods)
                    + " |"
                )
    cells = {(r["dataset"], r["eps"], r["method"]): r for _, r in table[table.column == "reference"].iterrows()}
    lines += ["", "| Dataset | ĥ* | h0* |", "|---|---|---|"]
    lines += [f"| {d} | " + " | ".join(_cell(cells.get((d, math.inf, m))) for m in REFERENCES) + " |" for d in shown]
    lines += [
        "",
        "Non-private references: ĥ* trained on the curator's validation split with its labels, h0* its majority class.",
    ]
    own = without(table, repeats)
    top = leaders(own, methods, primary, tests)
    lines += ["", *leaders_table(top, shown, primary, methods, unled(own, methods, primary), majority_class(table))]
    if {TUNED, CONFIGURED} <= set(table.column):
        lines += ["", *effect_table(tuning_effect(own, methods))]
    lines += [
        "",
        "Privacy spent per run, from the ledgers (largest over datasets and runs; δ: the Gaussian "
        "mechanisms' and DP-SGD's, which the Laplace and pure-DP ones do not spend):",
        "",
        "| method | column | mechanisms | neighbours | ε budget | ε spent | δ spent |",
        "|---|---|---|---|---|---|---|",
    ]
    private = table[~table.method.isin(REFERENCES)]
    for (method, column, eps), group in private.groupby(["method", "column", "eps"], sort=False):
        lines.append(
            f"| {NAMES[method]} | {column} | {_joined(group.mechanisms.str.split('; ').sum())} | "
            f"{_joined(group.neighbours)} | {eps_text(eps)} | {group.eps_spent.max():.4g} | "
            f"{group.delta.max():.3g} |"
        )
    if len(ranking):
        ranked = [m for m in methods if m not in UNRANKED]
        lines += [
            "",
            f"Average ranks over the datasets per ε ({primary}; 1 the best{REPEATS_NOTES}), "
            "the Friedman test (Iman and Davenport's F) and "
            "Nemenyi's critical difference at 0.05 (Demšar 2006; figure critical_difference.png):",
            "",
            "| ε | datasets | " + " | ".join(NAMES[m] for m in ranked) + " | F | p | CD |",
            "|---|---|" + "---|" * (len(ranked) + 3),
        ]
        for _, r in ranking.iterrows():
            lines.append(
                f"| {eps_text(r.eps)} | {int(r.datasets)} | "
                + " | ".join(f"{r[f'rank_{m}']:.2f}" for m in ranked)
                + f" | {r.F:.2f} | {r.p_F:.2g} | {r.cd:.2f} |"
            )
    lines += [
        "",
        f"Paired tests against C-ExPriL ({primary}; difference: method − C-ExPriL, points; p: two-sided, "
        "the Wilcoxon signed-rank test where every run draws fresh data, Nadeau and Bengio's corrected "
        "resampled t-test where the runs resample one record pool; Holm: adjusted over every test of the table):",
        "",
        "| Dataset | ε | method | runs | difference | test | p | Holm | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tests.itertuples():
        lines.append(
            f"| {t.dataset} | {eps_text(t.eps)} | {NAMES[t.method]} | {t.n_pairs} | {t.difference:+.1f} | "
            f"{t.test} | {t.p_value:.2g} | {t.p_holm:.2g} | {t.verdict} |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- round 3's checks (issue 49)


def majority_class(table):
    """h0*'s mean accuracy per dataset (a reference at eps = inf)."""
    return table[table.method == "h0_star"].set_index("dataset")["mean"]


def unled(table, methods, column):
    """The finite-eps cells (dataset, eps) where no compared method's mean beats h0*, the majority
    class: no one's lead, whatever the highest mean there."""
    majority = majority_class(table)
    compared = contested(table[table.method.isin(methods) & (table.column == column)])
    best = compared.groupby(["dataset", "eps"])["mean"].max()
    return {cell for cell, mean in best.items() if cell[0] in majority.index and mean <= majority[cell[0]]}


def missing_configured(table):
    """The (dataset, method, eps) cells with a tuned column but no as-configured one beside it: every
    table shows what the tuning changed (docs/comparison.md, "Tuning")."""
    private = table[~table.method.isin(REFERENCES)]
    columns = private.groupby(["dataset", "method", "eps"]).column.agg(set)
    return sorted(cell for cell, held in columns.items() if TUNED in held and CONFIGURED not in held)


def drops(runs, methods, column, designs):
    """Every fall of a method's mean accuracy from one eps to the next larger (eps = inf included, the
    last), per dataset, in `column`, with the 95 % confidence interval of the fall: the runs are
    paired by seed (run r draws the same data at every eps), the interval Student's on their
    differences, with the corrected resampled variance where the runs resample one record pool
    (statistics.paired_interval). `runs`: counted(); a frame, one row per drop, in points."""
    rows = []
    chosen = runs[runs.method.isin(methods) & (runs.column == column)]
    for (dataset, method), group in chosen.groupby(["dataset", "method"], sort=False):
        by_eps = group.pivot_table(index="seed", columns="eps", values="correct", aggfunc="first")
        n_test = group.n_test.iloc[0]
        design = designs[dataset]
        overlap = design.n_test / design.n_train if design.resampled else 0.0
        settings_of = group.groupby("eps").setting.first()
        eps_values = sorted(by_eps.columns)
        for low, high in zip(eps_values, eps_values[1:]):
            pairs = by_eps[[low, high]].dropna()
            change, lo, hi = statistics.paired_interval(100 * (pairs[high] - pairs[low]) / n_test, overlap)
            # On counts, as every comparison: equal totals are no fall, whatever the float mean's last bit.
            if pairs[high].sum() < pairs[low].sum():
                rows.append(
                    dict(
                        dataset=dataset,
                        method=method,
                        eps=low,
                        next_eps=high,
                        mean=100 * pairs[low].sum() / (len(pairs) * n_test),
                        next_mean=100 * pairs[high].sum() / (len(pairs) * n_test),
                        change=change,
                        ci_low=lo,
                        ci_high=hi,
                        runs=len(pairs),
                        setting=settings_of[low],
                        next_setting=settings_of[high],
                    )
                )
    return pd.DataFrame(rows, columns=DROP_COLUMNS)


DROP_COLUMNS = [
    "dataset",
    "method",
    "eps",
    "next_eps",
    "mean",
    "next_mean",
    "change",
    "ci_low",
    "ci_high",
    "runs",
    "setting",
    "next_setting",
]


def drops_table(falls, column):
    """drops() as Markdown."""
    lines = [
        f"Every fall of a method's mean from one ε to the next larger ({column}; points, 95 % confidence "
        "interval of the fall, runs paired by seed, corrected for resampled pools):",
        "",
    ]
    if falls.empty:
        return lines + ["None."]
    lines += ["| Dataset | method | ε → ε | mean → mean | fall [95 % CI] | settings |", "|---|---|---|---|---|---|"]
    for r in falls.itertuples():
        settings_text = f"`{r.setting or 'configured'}` → `{r.next_setting or 'configured'}`"
        lines.append(
            f"| {r.dataset} | {NAMES[r.method]} | {eps_text(r.eps)} → {eps_text(r.next_eps)} | {r.mean:.1f} → "
            f"{r.next_mean:.1f} | {r.change:+.1f} [{r.ci_low:+.1f}, {r.ci_high:+.1f}] | {settings_text} |"
        )
    return lines


def leaders_table(top, datasets, column, methods, unled_cells=frozenset(), majority=None):
    """The highest-mean table (leaders()) as Markdown, with a last row counting, per eps, the
    cells C-ExPriL wins (★) and loses (▲) significantly, and its legend."""
    eps_values = sorted(top.index.get_level_values("eps").unique())
    lines = [
        f"Highest mean per dataset and ε ({column}; ties listed):",
        "",
        "| Dataset | " + " | ".join(eps_text(e) for e in eps_values) + " |",
        "|---|" + "---|" * len(eps_values),
    ]
    for dataset in datasets:
        cells = []
        for e in eps_values:
            if (dataset, e) not in top.index:
                cells.append("n/a")
                continue
            leader = top.loc[(dataset, e)]
            if (dataset, e) in unled_cells:
                cells.append(f"no lead: {leader['methods']} ({leader['mean']:.1f}) ≤ h0* ({majority[dataset]:.1f})")
                continue
            marks = " ".join(m for m in (leader["mark"], "⊘" if leader["collapsed"] else "") if m)
            cells.append(f"{leader['methods']} ({leader['mean']:.1f})" + (f" {marks}" if marks else ""))
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    led = top[[cell not in unled_cells for cell in top.index]]
    counts = []
    for e in eps_values:
        m = led.mark[led.index.get_level_values("eps") == e]
        none = sum(cell[1] == e for cell in unled_cells)
        counts.append(f"{(m == '★').sum()} / {(m == '▲').sum()} of {len(m)}" + (f", no lead {none}" if none else ""))
    lines.append("| ★ / ▲ | " + " | ".join(counts) + " |")
    rivals = ", ".join(NAMES[m] for m in methods if m in RIVALS)
    return lines + [
        "",
        f"★: C-ExPriL leads and every rival ({rivals}) that ran is significantly below it; ▲: the leader is "
        "significantly above C-ExPriL (the paired tests below, Holm-adjusted); no mark: neither; ⊘: every "
        "leader collapsed; no lead: no method's mean beats h0*, the majority class, and the cell is no one's "
        "lead, marked or counted for none. Last row: the cells marked, per ε, and those no one leads.",
    ]


def effect_table(effect):
    """tuning_effect() as Markdown: one row per method, one column per eps."""
    eps_values = sorted(effect.eps.unique())
    lines = [
        "What tuning changed: tuned minus as configured, mean over the datasets (points), how many "
        f"datasets it raised{OWN_RUNS_NOTES}, and the collapsed cells (as configured → tuned, all ε):",
        "",
        "| method | " + " | ".join(f"ε {eps_text(e)}" for e in eps_values) + " | collapsed |",
        "|---|" + "---|" * (len(eps_values) + 1),
    ]
    for method, rows in effect.groupby("method", sort=False):
        by_eps = rows.set_index("eps")
        text = [
            f"{by_eps.change[e]:+.1f} ({by_eps.raised[e]}/{by_eps.datasets[e]})" if e in by_eps.index else "n/a"
            for e in eps_values
        ]
        collapsed = f"{rows.collapsed_configured.sum()} → {rows.collapsed_tuned.sum()}"
        lines.append(f"| {NAMES[method]} | " + " | ".join(text) + f" | {collapsed} |")
    return lines


def _positions(eps_values):
    """x positions on a log axis: each finite eps at itself, eps = inf one step (x3) beyond the
    largest (at 1 if none is finite)."""
    finite = [e for e in eps_values if math.isfinite(e)]
    beyond = 3 * max(finite) if finite else 1.0
    return {e: e if math.isfinite(e) else beyond for e in eps_values}


def figure(runs, table, methods, datasets, column, path_pdf, path_png, repeats=frozenset()):
    """Accuracy against eps, one panel per dataset: one line per method, mean ± one std over runs
    (seaborn's band), a cross on each collapsed cell, h* and h0* as horizontal reference lines.
    `repeats` (plain_repeats()) are not drawn: they would hide their base's line."""
    import matplotlib.pyplot as plt  # after expril.reports.reproduction's import, which selects the Agg backend

    shown = [d for d in datasets if d in set(runs.dataset)]
    compared = without(runs[runs.method.isin(methods) & (runs.column == column)], repeats)
    position = _positions(sorted(compared.eps.unique()))
    data = compared.assign(
        x=compared.eps.map(position), accuracy=100 * compared.accuracy, method=compared.method.map(NAMES)
    )
    flagged = table[(table.column == column) & table.collapsed & table.method.isin(methods)]
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
        cells = flagged[flagged.dataset == dataset]
        ax.scatter(
            cells.eps.map(position),
            cells["mean"],
            marker="x",
            color="black",
            s=40,
            zorder=5,
            label="collapsed to one class",
        )
        for method, style in zip(REFERENCES, ("--", ":")):
            reference = runs[(runs.dataset == dataset) & (runs.method == method)].accuracy
            ax.axhline(100 * reference.mean(), color="black", linestyle=style, linewidth=0.9, label=NAMES[method])
        ax.set_xscale("log")
        ax.set_xticks(list(position.values()), [eps_text(e) for e in position])
        ax.minorticks_off()
        ax.set(title=f"Dataset {dataset}", xlabel="ε (per run)", ylabel="test accuracy (%)")
        legend.update(zip(*reversed(ax.get_legend_handles_labels())))
        ax.get_legend().remove()
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=min(len(legend), 7), frameon=False)
    fig.tight_layout(rect=(0, 0.6 / (3.4 * rows), 1, 1))
    reproduction.save_figure(fig, path_pdf, path_png)


def cd_figure(ranking, ranks, path_pdf, path_png):
    """One critical-difference diagram per eps (Demšar 2006, Fig. 1)."""
    import matplotlib.pyplot as plt

    panels = list(ranking.itertuples())
    height = 2.4 * max(1, len(panels))
    fig, axes = plt.subplots(len(panels) or 1, 1, squeeze=False, figsize=(10, height))
    for ax, r in zip(axes.flat, panels):
        named = ranks[r.eps].rename(index=NAMES)
        statistics.cd_diagram(
            ax, named, r.cd, f"ε = {eps_text(r.eps)}: Friedman p = {r.p_F:.2g}, {r.datasets} datasets"
        )
    # The method names sit beside the axes, outside them; the margins are in inches (0.9 above the
    # first axis, for its title and ticks), whatever the number of panels.
    fig.subplots_adjust(left=0.25, right=0.75, top=1 - 0.9 / height, bottom=0.1 / height, hspace=1.0)
    reproduction.save_figure(fig, path_pdf, path_png)


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
    runs,
    reference_files,
    methods,
    datasets,
    iterations,
    designs,
    out,
    histories=(),
    published_folder=None,
    currency=None,
):
    """Write every run's accuracy, the comparison table (CSV, Markdown), the paired tests, the
    rank tests and the figures to `out`'s paths, from the runs the workflow lists (`runs`: dicts
    with method, dataset, eps, column, setting, evaluation and ledger files; rules/compare_common.smk)
    and, beside `methods`, the other methods and the references of a published study. `designs`:
    expril.reports.design.designs() of the configuration. `currency` (expril.workflow.currency):
    the table's; every ledger row of its runs must agree with it (currency.check_ledgers)."""
    accuracy, (spent, books) = read_runs(runs, iterations), privacy(runs, currency)
    # The primary column is this run's (tuned where it tunes), or a published study's where no method runs here.
    own = set(accuracy.column)
    if currency is not None:
        check_ledgers(books, currency)
    if published_folder is None:
        accuracy = pd.concat([accuracy, reference_runs(reference_files)], ignore_index=True)
    else:
        # empty where no configured method runs in this currency: left out, so the types stay the study's
        accuracy = pd.concat(
            [f for f in (published.accuracies(published_folder, methods), accuracy) if len(f)], ignore_index=True
        )
        spent = pd.concat([f for f in (published.spent(published_folder, methods), spent) if len(f)], ignore_index=True)
        methods = [m for m in published.methods(published_folder) if m not in methods] + list(methods)
    accuracy = counted(accuracy, designs)
    table = comparison_table(accuracy, spent)
    if published_folder is None and (missing := missing_configured(table)):
        raise ValueError(
            f"tuned cells without their as-configured column, e.g. {missing[:3]}: every table keeps it "
            "(config: comparison: columns: [tuned, as configured]; docs/comparison.md, Tuning)"
        )
    primary = TUNED if TUNED in (own or set(accuracy.column)) else CONFIGURED
    tests = paired_tests(accuracy, primary, designs)
    ranking, ranks = rankings(table, methods, primary)
    io.save_csv(out["runs"], accuracy)
    io.save_csv(out["comparison_csv"], table)
    io.save_csv(out["tests"], tests)
    io.save_csv(out["ranks"], ranking)
    note = reproduction.demo_note(books.drop_duplicates(subset=ledger.COLUMNS)) + history_note(
        ledger.history_spent(histories)
    )
    repeats = plain_repeats(accuracy)
    transferred = [d for d, design in designs.items() if design.transferred]
    md = markdown(table, tests, ranking, methods, datasets, primary, repeats, transferred, currency)
    falls = drops(without(accuracy, repeats), methods, primary, designs)
    io.save_text(out["comparison_md"], md + "\n" + "\n".join(drops_table(falls, primary)) + "\n" + note)
    figure(accuracy, table, methods, datasets, primary, out["figure_pdf"], out["figure_png"], repeats)
    cd_figure(ranking, ranks, out["cd_pdf"], out["cd_png"])

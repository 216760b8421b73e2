"""Privacy budget ledger: one row per oracle query and run, checked when the query is answered.

Each oracle job writes the ledger of its chain of queries (the previous query's ledger plus its
own rows), so the ledger of a run's last query is that run's whole account. A query beyond the
run's plan, or a total above the run's budget, fails the job before anything is released.
"""
import math

import pandas as pd

from .io import save_csv

COLUMNS = ["dataset", "seed", "eps_budget", "query", "rule", "mechanism", "sensitivity", "scale", "eps_spent"]


class BudgetError(RuntimeError):
    pass


def eps_spent(sensitivity, scale):
    """Laplace mechanism: eps = sensitivity / scale (no noise spends an infinite budget)."""
    return math.inf if scale == 0 else sensitivity / scale


def record(path, previous, dataset, seeds, query, rule, privacy):
    """Append this query's rows to the chain's ledger after checking plan and budget.

    `privacy` holds eps (budget), scale, mechanism, sensitivity and planned_queries.
    """
    rows = pd.DataFrame({
        "dataset": dataset, "seed": [int(s) for s in seeds], "eps_budget": privacy["eps"], "query": query,
        "rule": rule, "mechanism": privacy["mechanism"], "sensitivity": privacy["sensitivity"],
        "scale": privacy["scale"], "eps_spent": eps_spent(privacy["sensitivity"], privacy["scale"]),
    })
    book = pd.concat([previous, rows], ignore_index=True) if previous is not None else rows
    per_seed = book.groupby("seed")
    asked = per_seed.size().max()
    if asked > privacy["planned_queries"]:
        raise BudgetError(f"{dataset}: query {query!r} is query {asked} of a run planned for "
                          f"{privacy['planned_queries']}; lambda was set for the plan, so it would overspend")
    spent = per_seed["eps_spent"].sum().max()
    if spent > privacy["eps"] * (1 + 1e-9):
        raise BudgetError(f"{dataset}: query {query!r} brings the run's spent eps to {spent:.6g}, "
                          f"above its budget {privacy['eps']:.6g}")
    # Exact: the next query's check sums these values (2/3 written as 0.666667 would overspend).
    save_csv(path, book[COLUMNS], exact=True)
    return book


def load(path):
    return pd.read_csv(path) if path else None

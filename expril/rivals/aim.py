"""Marginal-based synthetic data with AIM (McKenna, Mullins, Sheldon and Miklau, VLDB 2022) or MST
(McKenna, Miklau and Sheldon 2021), as OpenDP implements them on Private-PGM (`opendp.extras.mbi`,
`mbi`), in pure DP (max divergence: Laplace measurements, report-noisy-max selection) or in
zero-concentrated DP (Gaussian measurements, the same selection), as OpenDP accounts both.

The curator holds its validation split discretised on the learner's bins (public: quantiles of
the source), one column per feature (its bin) and the label. AIM's workload is every (feature,
label) marginal, the information ExPriL's own queries are about (per-feature histograms of the
records and of a hypothesis's errors); MST picks its own tree of pairs. The library spends eps on
one-way marginals and then on the marginals it selects, fits a graphical model to the noisy
measurements, and the curator releases records drawn from it. At eps = inf there is no noise to
spend: the model is fitted to the exact workload marginals, what AIM measures in the limit.

OpenDP draws its noise from the operating system's secure generator and cannot be seeded: unlike
the oracle's keyed noise, a rerun of a release draws (and spends) afresh (docs/synthetic.md).
"""

import math
import os

import numpy as np

from expril.method.binning import feature_bin_ids

LABEL = "y"
ALGORITHMS = ("aim", "mst")


def columns(d):
    return [f"x{j}" for j in range(d)] + [LABEL]


def workload(d):
    """Every (feature, label) marginal, as the cliques of the columns' names."""
    return [(f"x{j}", LABEL) for j in range(d)]


def _import(threads):
    """OpenDP, polars and mbi, with JAX (mbi's estimator) and polars held to `threads` cores
    (effective only before their first import in the process)."""
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
    import mbi
    import opendp.extras.mbi._aim as aim_internals
    import opendp.extras.mbi._mst as mst_internals
    import opendp.extras.mbi._table as table_internals
    import opendp.prelude as dp
    import polars as pl
    from opendp.mod import OpenDPException

    dp.enable_features("contrib")
    if not hasattr(aim_internals._make_aim_select, "exhausted_budget_guard"):
        aim_internals._make_aim_select = _stop_on_exhausted_budget(aim_internals._make_aim_select, OpenDPException)
    if not hasattr(mst_internals._make_mst_select, "rounding_margin"):
        mst_internals._make_mst_select = _select_within_budget(mst_internals._make_mst_select)
    if not hasattr(table_internals.binary_search_param, "unbounded"):
        table_internals.binary_search_param = _search_from_floor(table_internals.binary_search_param)
    if not hasattr(aim_internals.binary_search_chain, "boundaries"):
        aim_internals.binary_search_chain = _remembering_boundaries(dp.binary_search_param)
    return dp, pl, mbi


# Below this, a round's budget is the floating-point remainder of eps, not a budget.
REMAINDER = 1e-12


def _stop_on_exhausted_budget(select, error):
    """OpenDP 0.16.0's AIM can start a last round on the floating-point remainder of its budget
    (5.6e-17 of eps = 1 on dataset A): the selection's scale search then fails with an
    OpenDPException, where the library's guard for "d_out so small that no scale is suitable"
    catches ValueError only and returns None, which ends AIM. This returns None there as intended:
    the round is never built, so nothing is measured or spent."""

    def guarded(*args, **kwargs):
        try:
            return select(*args, **kwargs)
        except error:
            if kwargs["d_out"] + kwargs["d_measure"] < REMAINDER:
                return None
            raise

    guarded.exhausted_budget_guard = True
    return guarded


# A noise scale below any the one-way marginals take (their eps would exceed 1e6 per column).
SEARCH_FLOOR = 1e-6


def _search_from_floor(search):
    """OpenDP 0.16.0 searches the one-way marginals' noise scale without bounds. Its predicate raises
    at scale 0, and the search then halves from 0.5 down to the smallest float before it turns:
    about 1,130 measurements built (about 20 s on CTG-B, over half of a release), of which about 1,070
    below any useful scale. From a positive floor, the same search returns the same scale, the
    smallest that passes, in about 60. Where the floor itself passes, OpenDP reports the boundary
    below it, and the unbounded search runs as before."""

    def from_floor(make_chain, d_in, d_out, bounds=(None, None), T=None):
        if bounds in (None, (None, None)) and T is float:
            try:
                return search(make_chain, d_in, d_out, bounds=(SEARCH_FLOOR, None), T=T)
            except ValueError:  # the boundary is below the floor
                pass
        return search(make_chain, d_in, d_out, bounds=bounds, T=T)

    from_floor.unbounded = search
    return from_floor


def _passes(make_chain, d_in, d_out, value):
    """Whether the chain at `value` is (d_in, d_out)-close; a value it cannot be built at fails."""
    try:
        return make_chain(value).check(d_in, d_out)
    except Exception:  # OpenDP refuses the value (a scale of 0, say)
        return False


def _remembering_boundaries(search):
    """OpenDP 0.16.0's AIM searches the noise scale of its selection and of its measurement in
    every round, about 60 measurements built each: about a fifth of a release's CPU time on D at
    eps 10 (RESULTS.md (p)). The same (d_in, d_out) recurs, in every round until AIM anneals
    and in every release of a block. A float search returns the boundary, the smallest passing
    float, whose float just below fails (a monotone predicate has one). A value found before for
    the same (d_in, d_out) is taken when it is still this chain's boundary: it passes and the
    float below fails, two measurements built; otherwise the search runs. The value is then the
    one the search would have returned, so the release and OpenDP's account of it are unchanged.
    Returns binary_search_chain's chain (`search`: binary_search_param)."""
    found = {}

    def chain(make_chain, d_in, d_out, bounds=(None, None), T=None):
        key = (repr(d_in), repr(d_out), repr(bounds), T)
        value = found.get(key)
        if not (
            T is float
            and value is not None
            and _passes(make_chain, d_in, d_out, value)
            and not _passes(make_chain, d_in, d_out, math.nextafter(value, -math.inf))
        ):
            value = search(make_chain, d_in, d_out, bounds, T)
            if len(found) >= 1024:
                found.clear()
            found[key] = value
        return make_chain(value)

    chain.boundaries = found
    return chain


# The share of MST's selection budget left unspent: far above floating-point rounding (1e-15).
ROUNDING_MARGIN = 1e-9


def _select_within_budget(select):
    """OpenDP 0.16.0's MST splits its selection budget d_out into one equal part per selected pair
    and composes them; summed in floating point the parts can exceed d_out by a few ulps (26
    columns at eps = 0.1: 0.005000000000000003 > 0.004999999999999996), and its own compositor
    then refuses the query. The selection is given d_out less a relative ROUNDING_MARGIN: it
    spends no more than it was allotted, so OpenDP's account of the release still bounds it."""

    def margined(*args, d_out, **kwargs):
        return select(*args, d_out=d_out * (1 - ROUNDING_MARGIN), **kwargs)

    margined.rounding_margin = True
    return margined


def fit(x, y, edges, eps, algorithm="aim", threads=1, measure="epsilon", knobs=None):
    """The graphical model of the curator's records (x (n, d), y (n,)) on the bins `edges`, and
    what the library accounts for it (add/remove one record), in its privacy `measure`: `eps` is
    the budget in it, pure DP's epsilon (Laplace measurements) or zCDP's rho (Gaussian ones).
    Columns are the features' bin indices and the label; OpenDP adds a null category to each (last
    index), which holds no record. `knobs` (AIM's only): `oneway`, the one-way marginals' share of
    the budget (OpenDP's `oneway_split`, 1/2 by default), and `rounds`, AIM's rounds per column
    (OpenDP's default 16); without noise (eps = inf) they change nothing."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}, expected one of {ALGORITHMS}")
    knobs = dict(knobs or {})
    if set(knobs) - {"oneway", "rounds"} or (knobs and algorithm != "aim"):
        raise ValueError(f"{algorithm}: unknown knobs {knobs} (AIM takes 'oneway' and 'rounds')")
    dp, pl, mbi = _import(threads)
    ids = feature_bin_ids(edges, x)
    names = columns(ids.shape[1])
    sizes = [len(e) + 1 for e in edges] + [2]
    data = {name: column.astype(np.int64) for name, column in zip(names, [*ids.T, np.asarray(y)])}
    if math.isinf(eps):
        return _exact_model(data, sizes, workload(ids.shape[1]), dp, mbi), math.inf
    context = dp.Context.compositor(
        data=pl.LazyFrame(data), privacy_unit=dp.unit_of(contributions=1), privacy_loss=dp.loss_of(**{measure: eps})
    )
    measurement = _table_measurement(context, sizes, (measure, eps), algorithm, dp, knobs)
    spent = measurement.map(1)
    return context(measurement).model, spent


# OpenDP's contingency-table measurements built in this process, by their public parameters.
_MEASUREMENTS = {}


def _aim_options(knobs, columns):
    """OpenDP AIM's options for `knobs` (fit), none as configured (OpenDP's defaults)."""
    options = {}
    if "oneway" in knobs:
        options["oneway_split"] = float(knobs["oneway"])
    if "rounds" in knobs:
        options["rounds"] = int(knobs["rounds"]) * columns
    return options


def _table_measurement(context, sizes, budget, algorithm, dp, knobs=None):
    """OpenDP's measurement releasing the contingency table, as `query.contingency_table()` builds
    it, built once per process for each (columns' sizes, budget, algorithm) and the context's data
    domain (the columns' names and types). It depends on these public parameters alone: its plan
    starts from an empty frame of that domain, never from the records. Building it (with a search
    for the one-way marginals' noise scale) is about half of a release's time at CTG's size
    (docs/performance.md); the seeds of a block whose bins have the same counts share it. Each
    release still invokes it through its own compositor on its own records (`context(measurement)`,
    what `query.release()` does), so each run is eps-DP as before, accounted by OpenDP, with fresh
    noise, selections and model."""
    domain = context.accountant.input_domain
    knobs = dict(knobs or {})
    key = (tuple(sizes), budget, algorithm, tuple(sorted(knobs.items())))
    if key not in _MEASUREMENTS or _MEASUREMENTS[key][0] != domain:
        names = columns(len(sizes) - 1)
        method = (
            dp.mbi.AIM(
                queries=[dp.mbi.Count(c) for c in workload(len(names) - 1)],
                estimator=_estimator,
                **_aim_options(knobs, len(names)),
            )
            if algorithm == "aim"
            else dp.mbi.MST()
        )
        query = context.query(**dict([budget])).contingency_table(
            keys={n: list(range(s)) for n, s in zip(names, sizes)}, algorithm=method
        )
        if len(_MEASUREMENTS) >= 16:
            _MEASUREMENTS.clear()
        _MEASUREMENTS[key] = (domain, query.resolve())
    return _MEASUREMENTS[key][1]


def _estimator(domain, measurements, *, potentials=None):
    """The estimator of AIM's rounds: mbi's mirror descent compiled once per process and data set
    (expril.rivals.star_estimator), as OpenDP's `Algorithm.estimator` lets one choose."""
    from expril.rivals import star_estimator

    return star_estimator.mirror_descent(domain, measurements, potentials=potentials, label=LABEL)


def _exact_model(data, sizes, cliques, dp, mbi):
    """The estimator OpenDP's algorithms use, fitted to exact marginals of the workload's cliques
    and their one-way marginals."""
    measured = sorted({(c,) for clique in cliques for c in clique} | set(cliques))
    measurements = []
    for clique in measured:
        shape = [sizes[list(data).index(c)] for c in clique]
        counts = np.zeros(shape)
        np.add.at(counts, tuple(data[c] for c in clique), 1.0)
        measurements.append(mbi.LinearMeasurement(counts.ravel(), clique, stddev=1.0))
    domain = mbi.Domain.fromdict(dict(zip(data, sizes)))
    return dp.mbi.mirror_descent(domain, measurements)


def synthesize(model, sizes, rows, generator):
    """`rows` records (bin indices (rows, d), labels (rows,)) drawn independently from the model
    conditioned on no null category. `sizes`: the real categories of each column, features then
    label; OpenDP adds a null one (index sizes[j]) to each, which holds no record but may get noisy
    mass."""
    names = columns(len(sizes) - 1)
    state = np.random.get_state()
    try:
        # mbi samples from NumPy's global generator: seeded from ours, and restored after.
        np.random.seed(generator.integers(2**32))
        draw = _without_null(model, sizes).synthetic_data(rows, method="sample").df[names].to_numpy()
    finally:
        np.random.set_state(state)
    if not (draw < np.array(sizes)).all():
        raise AssertionError("a record drawn with a null category, which its conditioning excludes")
    return draw[:, :-1], draw[:, -1].astype(np.int8)


# A log-potential low enough that exp() of it is 0 in any float, yet finite (no inf - inf in the
# sampler's message passing).
EXCLUDED = -1e30


def _without_null(model, sizes):
    """The model conditioned on no null category: in one clique of each column, the null's
    log-potential set to EXCLUDED. Redrawing records that hit a null gives the same distribution,
    but its acceptance is the product of the columns' non-null mass, which at small eps on 22
    columns made one release take more than ten minutes."""
    import jax.numpy as jnp
    from mbi import CliqueVector, Domain, Factor, MarkovRandomField

    arrays = dict(model.potentials.arrays)
    for name, size in zip(columns(len(sizes) - 1), sizes):
        if model.domain[name] > size:
            clique = next(c for c in model.cliques if name in c)
            mask = np.zeros(model.domain[name])
            mask[size:] = EXCLUDED
            arrays[clique] = arrays[clique] + Factor(Domain([name], [model.domain[name]]), jnp.asarray(mask))
    potentials = CliqueVector(model.domain, model.cliques, arrays)
    return MarkovRandomField(potentials=potentials, marginals=model.marginals, total=model.total)


def debin(ids, source_x, edges, generator):
    """Records in the source's units for bin indices (m, d): each entry takes the value of a
    source record drawn at random from the same bin of the same feature (source bins are never
    empty), so values follow the source's distribution within a bin and discrete features keep
    their values."""
    source_ids = feature_bin_ids(edges, source_x)
    out = np.empty(ids.shape)
    for j in range(ids.shape[1]):
        order = np.argsort(source_ids[:, j], kind="stable")
        counts = np.bincount(source_ids[:, j], minlength=len(edges[j]) + 1)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        pick = starts[ids[:, j]] + np.floor(generator.random(len(ids)) * counts[ids[:, j]]).astype(int)
        out[:, j] = source_x[order[pick], j]
    return out

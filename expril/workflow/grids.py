"""The comparison's tuning grids (config/tuning.yaml; docs/comparison.md, "Tuning"): each method
family's settings, how a setting is named in result paths, and the knobs it gives the rules.

A setting is one value per axis of its family's grid. In a path it is the suffix of its method's
folder: '' where every axis has its configured value (so the as-configured runs keep today's
paths), else '~axis=value' for each axis that does not, in the grid's order ('~model=tanh32~snr=16').
A rule whose outputs depend on some axes only is asked for the suffix of those axes alone
(`suffix(..., axes=...)`), so that settings differing elsewhere share its files.
"""

import itertools
import math

import yaml

CONFIGURED = "configured"
# ExPriL's methods' families: the grid each chooses from (C and I share ExPriL's chain, each
# choosing its own setting). A plug-in method's family is its name (expril/plugins/).
FAMILY = {"C": "expril", "I": "expril"}


def family(method):
    """The grid a compared method chooses from."""
    return FAMILY.get(method, method)


# ExPriL's methods: the variant of its chain each reports.
VARIANT = {"C": "C", "I": "I"}


def load(path, methods=()):
    """The tuning grids of the file `path`, with the grid of each plug-in method of `methods` that
    carries its own (Method.grid, its recipe axes' values in Method.recipes) where the file has no
    entry for it: a file's entry wins (the smoke test's trimmed grids)."""
    grid = yaml.safe_load(open(path))
    sources = dict.fromkeys(grid["families"], path)
    for method in methods:
        if method.grid is not None and method.name not in grid["families"]:
            grid["families"][method.name] = method.grid
            sources[method.name] = f"plug-in {type(method).__module__}: grid"
            for axis, recipes in method.recipes.items():
                grid.setdefault("recipes", {})[axis] = {**recipes, **grid.get("recipes", {}).get(axis, {})}
    for family, axes in grid["families"].items():
        for axis, values in axes.items():
            if values[0] != CONFIGURED or len(set(map(str, values))) != len(values):
                raise ValueError(
                    f"{sources[family]}: families: {family}: {axis}: the first value must be '{CONFIGURED}', "
                    f"and no value may repeat, got {values}"
                )
    return grid


def check_effort(grid, families, path):
    """Equal effort (docs/comparison.md, Tuning): each of `families` (the grids the study's methods
    choose from) has as many settings, each calibrated at every calibrated eps, as the grid file's
    `effort` says the study's methods have (none: unchecked, as the smoke test's trimmed grids). A
    family without a grid is the gate's to refuse, naming its plug-in (expril.plugins.gate)."""
    effort = grid.get("effort")
    for family in [f for f in dict.fromkeys(families) if f in grid["families"]] if effort else ():
        count = len(settings(grid, family))
        if count == effort:
            continue
        if count < effort and effort % count == 0:
            fix = (
                f"add an axis of {effort // count} values (its first '{CONFIGURED}'), or values to its axes, "
                f"to make {effort // count} times as many"
            )
        else:
            fix = f"change its axes so that their values' product is {effort}"
        raise ValueError(
            f"{path}: equal effort: every compared method has {effort} settings at each calibrated eps "
            f"(`effort`), {family}'s grid has {count}: {fix} (under `families: {family}:`, or in its "
            "plug-in's Method.grid), or run the study as configured only (comparison: columns: [as configured])"
        )


def settings(grid, family):
    """Every setting of a family, the as-configured one first, as {axis: value}: the product of its
    axes, less those that move more than one of the grid file's `one_at_a_time` axes off their
    configured value (each such axis is varied with the others of its kind as configured)."""
    axes = grid["families"][family]
    apart = set(grid.get("one_at_a_time", ())) & set(axes)
    product = (dict(zip(axes, values)) for values in itertools.product(*axes.values()))
    return [s for s in product if sum(s[axis] != CONFIGURED for axis in apart) <= 1]


def suffix(grid, family, setting, axes=None):
    """The setting's name in paths, over `axes` (all by default): see the module docstring."""
    return "".join(
        f"~{axis}={setting[axis]}"
        for axis in grid["families"][family]
        if (axes is None or axis in axes) and setting[axis] != CONFIGURED
    )


def parse(grid, family, text):
    """The setting a path suffix names (the axes it omits at their configured value)."""
    axes = grid["families"][family]
    setting = dict.fromkeys(axes, CONFIGURED)
    for part in filter(None, text.split("~")):
        axis, _, value = part.partition("=")
        known = {str(v): v for v in axes.get(axis, ())}
        if value not in known:
            raise ValueError(
                f"{text!r} is no setting of {family}'s grid: {part!r} is not one of its values "
                f"({', '.join(f'{a}={v}' for a, vs in axes.items() for v in vs[1:])})"
            )
        setting[axis] = known[value]
    if suffix(grid, family, setting) != text:
        raise ValueError(
            f"{text!r} names a setting of {family}'s grid that paths call {suffix(grid, family, setting)!r} "
            "(its axes in the grid's order, the configured ones left out)"
        )
    return setting


def nearest(eps, calibrated):
    """The calibrated eps nearest to `eps` on a log scale (inf to inf; a tie to the smaller): the
    one whose choice an uncalibrated eps takes."""
    if math.isinf(eps):
        return math.inf
    finite = sorted(e for e in calibrated if math.isfinite(e))
    return min(finite, key=lambda e: abs(math.log(e) - math.log(eps)))


def value(setting, axis, configured):
    """The setting's value on `axis`, `configured` where it keeps the configured one."""
    chosen = setting.get(axis, CONFIGURED)
    return configured if chosen == CONFIGURED else chosen


def network(grid, setting, hidden):
    """The final network a setting chooses from the model family: the dataset's h* network
    (`hidden`, ReLU) as configured."""
    model = grid["models"][setting.get("model", CONFIGURED)]
    return {"hidden": list(hidden), "activation": "relu"} if model is None else dict(model)


def knob(grid, setting, name, configured):
    """The value a setting gives the knob `name`: its axis of that name's, else the recipe that one
    of its recipe axes chooses (config/tuning.yaml `recipes`) where it sets the knob, else
    `configured` (ExPriL's `iterations` and `split` are knobs of its `budget` axis)."""
    if name in setting:
        return value(setting, name, configured)
    for axis, chosen in setting.items():
        knobs = grid.get("recipes", {}).get(axis, {}).get(chosen, {})
        if chosen != CONFIGURED and name in knobs:
            return knobs[name]
    return configured


def knobs_of(grid, axis, chosen):
    """The knobs a value of an axis sets: none as configured, a recipe's own, else the axis's."""
    if chosen == CONFIGURED:
        return set()
    recipes = grid.get("recipes", {}).get(axis)
    return set(recipes[chosen]) if recipes and chosen in recipes else {axis}


def depends(grid, family, setting, knobs):
    """The axes of `family` through which `setting` sets any of `knobs` (an axis of that name, or a
    recipe axis whose chosen recipe sets one): a file that depends on those knobs alone is named by
    these axes (`suffix(..., axes=depends(...))`), so that settings agreeing on them share it."""
    return [
        axis
        for axis in grid["families"][family]
        if axis in knobs or knobs_of(grid, axis, setting.get(axis, CONFIGURED)) & set(knobs)
    ]


# Knobs of ExPriL's grid that act on the noise alone (its bins' signal-to-noise target, its budget's
# split); a plug-in method's are its Method.noise_knobs.
NOISE_KNOBS = frozenset({"snr", "split"})


def noiseless_duplicate(grid, setting, noise_knobs):
    """Whether, at eps = inf, `setting` runs as another of its family's (one of its axes sets knobs
    of `noise_knobs`, its family's that act on the noise alone, and no other): the calibration runs
    it at finite eps only."""
    return any((knobs := knobs_of(grid, axis, chosen)) and knobs <= noise_knobs for axis, chosen in setting.items())


def recipe(grid, setting, axis, configured):
    """The knobs of a recipe axis (DP-SGD's `recipe`, DP-MERF's `generator`): the configured
    knobs, overridden by the setting's named recipe."""
    value = setting.get(axis, CONFIGURED)
    return dict(configured) if value == CONFIGURED else {**configured, **grid["recipes"][axis][value]}

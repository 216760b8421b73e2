# The tuning settings in result paths (expril/workflow/grids.py, config/tuning.yaml): a method's
# folder carries its setting as a suffix, the {setting} wildcard ('' as configured), and a rule's
# knobs come from it. The reproduction runs as configured only.

GRID = grids.load(config["comparison"]["grid"], registry.methods().values())


def setting(wildcards, family):
    return grids.parse(GRID, family, wildcards.setting)


def upstream(wildcards, family, knobs):
    """The suffix of a file the rule reads that depends on these knobs of its setting alone (the
    axes that set them: grids.depends)."""
    chosen = setting(wildcards, family)
    return grids.suffix(
        GRID, family, chosen, grids.depends(GRID, family, chosen, knobs)
    )


def network(wildcards, family):
    """The final network of the rule's setting (the model family, config/tuning.yaml)."""
    return grids.network(GRID, setting(wildcards, family), spec(wildcards)["hidden"])


def snr(wildcards, family):
    """The bins' signal-to-noise target of the rule's setting."""
    return grids.knob(GRID, setting(wildcards, family), "snr", config["bins"]["snr"])


def iterations(wildcards, family="expril"):
    """ExPriL's T in the rule's setting (config `iterations` as configured)."""
    chosen = setting(wildcards, family)
    return int(grids.knob(GRID, chosen, "iterations", T))


def budget_split(wildcards, family="expril"):
    """The bin counts query's share of eps in the rule's setting (None: Eq. 14's equal shares)."""
    chosen = setting(wildcards, family)
    split = grids.knob(GRID, chosen, "split", None)
    return None if split is None else float(split)


def feature_map_file(dataset, seeds, features, scale=grids.CONFIGURED):
    """The learner's random feature map of a block: D = `features`, the bandwidth `scale` times the
    median heuristic's (rules/learner.smk: feature_maps)."""
    suffix = (
        "" if features == config["comparison"]["random_features"] else f"~D={features}"
    )
    suffix += "" if scale == grids.CONFIGURED else f"~bandwidth={scale}"
    return f"{R}/learner/{dataset}/{seeds}/feature_map{suffix}.npz"

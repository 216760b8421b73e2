# The tuning settings in result paths (expril/workflow/grids.py, config/tuning.yaml): a method's
# folder carries its setting as a suffix, the {setting} wildcard ('' as configured), and a rule's
# knobs come from it. The reproduction runs as configured only.

GRID = grids.load(config["comparison"]["grid"])


def setting(wildcards, family):
    return grids.parse(GRID, family, wildcards.setting)


def chain_family(wildcards):
    """ExPriL's chain is tuned on ExPriL's grid, and with Pb. 1 by MMD on the MMD grid."""
    return "mmd" if wildcards.weighting == "-mmd" else "expril"


def upstream(wildcards, family, axes):
    """The suffix of a file the rule reads that depends on these axes of its setting alone."""
    return grids.suffix(GRID, family, setting(wildcards, family), axes)


def network(wildcards, family):
    """The final network of the rule's setting (the model family, config/tuning.yaml)."""
    return grids.network(GRID, setting(wildcards, family), spec(wildcards)["hidden"])


def snr(wildcards, family):
    """The bins' signal-to-noise target of the rule's setting."""
    value = setting(wildcards, family).get("snr", grids.CONFIGURED)
    return config["bins"]["snr"] if value == grids.CONFIGURED else value


def dpsgd_recipe(wildcards):
    """DP-SGD's knobs: as configured, the training's optimiser, lr and batch with
    comparison.dpsgd's epochs and clipping; a setting's recipe overrides them."""
    d = config["comparison"]["dpsgd"]
    configured = {
        "optimizer": "adam",
        "momentum": 0.0,
        "lr": config["training"]["lr"],
        "batch_size": config["training"]["batch_size"],
        "epochs": d["epochs"],
        "max_grad_norm": d["max_grad_norm"],
    }
    return grids.recipe(GRID, setting(wildcards, "dpsgd"), "recipe", configured)


def dpsgd_sample_rate(wildcards):
    """A recipe's `sampling` share of n', else Opacus's rate for the configured batch size."""
    knobs = dpsgd_recipe(wildcards)
    if "sampling" in knobs:
        return knobs["sampling"]
    return settings.sample_rate(n_val(wildcards), knobs["batch_size"])


def dpmerf_generator(wildcards):
    """DP-MERF's generator and random features: as configured, or the setting's recipe ('width':
    the official tabular generator's hidden widths, 4d and 2d)."""
    configured = config["comparison"]["dpmerf"] | {
        "class_weighting": "released",
        "random_features": config["comparison"]["random_features"],
    }
    knobs = grids.recipe(GRID, setting(wildcards, "dpmerf"), "generator", configured)
    if knobs["hidden"] == "width":
        d = settings.feature_count(spec(wildcards))
        knobs["hidden"] = [4 * d, 2 * d]
    return knobs


def feature_map_file(wildcards, family):
    """The random feature map a setting of `family` (mmd or dpmerf) uses: its D and bandwidth."""
    if family == "dpmerf":
        features, scale = (
            dpmerf_generator(wildcards)["random_features"],
            grids.CONFIGURED,
        )
    else:
        features = config["comparison"]["random_features"]
        scale = setting(wildcards, family)["bandwidth"]
    suffix = (
        "" if features == config["comparison"]["random_features"] else f"~D={features}"
    )
    suffix += "" if scale == grids.CONFIGURED else f"~bandwidth={scale}"
    return f"{R}/learner/{wildcards.dataset}/{wildcards.seeds}/feature_map{suffix}.npz"

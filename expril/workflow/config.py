"""The workflow's configuration as the schema types it, whether it came from a file or the command line,
its plug-in methods' own settings checked against the schemas they declare (`check_settings`), and
the checks the schema cannot make (`check_mechanism`).

Snakemake reads a top-level `--config KEY=VALUE` as a number or a boolean where it can, but every
list item and nested value stays text (`training={"epochs": 30}` gives epochs '30'), which the
schema then refuses. Only the Snakemake process that plans the workflow, and the benchmarks that
read its configuration, import this module."""

import functools
import math
from pathlib import Path

import jsonschema
import yaml

from expril.privacy import mechanisms


def schema(schema_path, methods):
    """The configuration's schema (a YAML file) with each plug-in method's own settings
    (Method.config_schema; `methods`: registry.methods()) as the schema of `comparison: <its name>`."""
    whole = yaml.safe_load(Path(schema_path).read_text())
    for method in methods.values():
        if method.config_schema is not None:
            whole["properties"]["comparison"]["properties"][method.name] = method.config_schema
    return whole


def check_settings(config, methods):
    """Refuse a plug-in method's own settings, `comparison: <its name>`, where they are missing or its
    schema (Method.config_schema) refuses them, naming the key and the plug-in."""
    for method in methods.values():
        if method.config_schema is None:
            continue
        key, module = f"config: comparison: {method.name}", type(method).__module__
        if method.name not in config["comparison"]:
            raise ValueError(f"{key}: missing; the plug-in {module} reads its settings there")
        checker = jsonschema.validators.validator_for(method.config_schema)(method.config_schema)
        error = jsonschema.exceptions.best_match(checker.iter_errors(config["comparison"][method.name]))
        if error:
            where = ": ".join([key, *map(str, error.absolute_path)])
            raise ValueError(f"{where}: {error.message} (the settings {module} declares)")


def schema_types(config, schema):
    """`config` with each text value that `schema` (a dict: `schema`'s) refuses where it stands, but
    accepts once read as YAML (`30`, `true`, `.inf`) or as a Python float (`1e-5`, which YAML reads as text),
    replaced by that reading. Text the schema accepts as it is ('inf' for an epsilon, a dataset
    name) stays. Where no reading is valid, the reading of the key's declared type replaces the
    text if there is one, and the text stays otherwise, so that validation names the key and what
    it breaks."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    return _typed(config, schema, validator)


def _typed(value, node, validator):
    node = _resolved(node, validator.schema)
    if isinstance(value, dict):
        return {key: _typed(item, _property(node, key), validator) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item, node.get("items", {}), validator) for item in value]
    if isinstance(value, str):
        return _text(value, validator.evolve(schema=node))
    return value


def _resolved(node, root):
    """The schema a local reference ('#/definitions/positive_int') points to."""
    while "$ref" in node:
        node = functools.reduce(lambda part, key: part[key], node["$ref"].removeprefix("#/").split("/"), root)
    return node


def _property(node, key):
    extra = node.get("additionalProperties")
    return node.get("properties", {}).get(key, extra if isinstance(extra, dict) else {})


def _text(text, validator):
    if validator.is_valid(text):
        return text
    # nan is not a value any key means, though it passes numeric bounds
    readings = [reading for reading in _readings(text) if reading == reading]
    for reading in readings:
        if validator.is_valid(reading):
            return reading
    # None is valid: the reading of the type the key declares, if any, so that validation names
    # the bound it breaks ('7 is not a multiple of 2') rather than the type ("'7' is not of type").
    kind = validator.schema.get("type")
    typed = validator.evolve(schema={"type": kind})
    return next((reading for reading in readings if kind and typed.is_valid(reading)), text)


def _readings(text):
    try:
        yield yaml.safe_load(text)
    except yaml.YAMLError:
        pass
    try:
        yield float(text)
    except ValueError:
        pass


def readable_yaml(path):
    """`path`, once it parses as YAML: the Snakefile's config files pass through here, so that a
    malformed one is named with its line (Snakemake says only "Config file is not valid JSON or
    YAML"; it reads the files given with --configfile before the Snakefile runs, with that message)."""
    try:
        yaml.safe_load(Path(path).read_text())
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise ValueError(
            f"{path}: line {mark.line + 1}, column {mark.column + 1}: {error.problem or error.context}"
        ) from None
    return path


def planned_config(root="."):
    """The configuration the Snakefile plans with, for scripts outside it (the benchmarks): config.yaml
    updated by data/identification/choice.yaml as its `configfile:` lines do, and the schema's
    defaults filled in as rules/common.smk's validation does."""
    from snakemake.utils import update_config, validate

    root = Path(root)
    config = yaml.safe_load((root / "config.yaml").read_text())
    update_config(config, yaml.safe_load((root / "data/identification/choice.yaml").read_text()) or {})
    validate(config, schema=str(root / "config.schema.yaml"), set_default=True)
    return config


def check_mechanism(config):
    """Refuse the oracle's mechanism that `mechanism:` names, with the key to change, where it
    is not registered, does not answer ExPriL's bin queries, is a plug-in's, or adds Gaussian noise,
    which has no guarantee at a finite eps with `delta: 0`."""
    try:
        oracle = mechanisms.get(config["mechanism"])
    except ValueError as error:
        raise ValueError(f"config: mechanism: {error}") from None
    if not issubclass(oracle, mechanisms.Histogram):
        raise ValueError(f"config: mechanism: {config['mechanism']!r} does not answer ExPriL's bin queries")
    if oracle.__module__.startswith("expril.plugins."):  # ExPriL's jobs import no plug-in (as currency._check)
        raise ValueError(
            f"config: mechanism: {config['mechanism']!r} is plug-in {oracle.__module__}'s: ExPriL's chain applies "
            "the package's"
        )
    if oracle.needs_delta and config["delta"] == 0 and any(math.isfinite(float(e)) for e in config["epsilons"]):
        raise ValueError(
            f"config: delta: {config['mechanism']!r} adds Gaussian noise, whose guarantee at a finite eps "
            "needs delta > 0 (set `delta:`, e.g. 1.0e-5, or `mechanism: counts` for pure eps)"
        )

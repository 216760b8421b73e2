"""The workflow's configuration as the schema types it, whether it came from a file or the command line.

Snakemake reads a top-level `--config KEY=VALUE` as a number or a boolean where it can, but every
list item and nested value stays text (`training={"epochs": 30}` gives epochs '30'), which the
schema then refuses. Only the Snakemake process that plans the workflow imports this module."""
import functools
from pathlib import Path

import jsonschema
import yaml


def schema_types(config, schema_path):
    """`config` with each text value that the schema (a YAML file) refuses where it stands, but accepts once read
    as YAML (`30`, `true`, `.inf`) or as a Python float (`1e-5`, which YAML reads as text),
    replaced by that reading. Text the schema accepts as it is ('inf' for an epsilon, a dataset
    name) stays, and so does text no reading makes valid, so that validation names its key."""
    schema = yaml.safe_load(Path(schema_path).read_text())
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
    for reading in _readings(text):
        # nan is not a value any key means, though it passes numeric bounds
        if reading == reading and validator.is_valid(reading):
            return reading
    return text


def _readings(text):
    try:
        yield yaml.safe_load(text)
    except yaml.YAMLError:
        pass
    try:
        yield float(text)
    except ValueError:
        pass

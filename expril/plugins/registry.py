"""The registry of plug-in methods (expril.plugins.base): each module of expril/plugins/ but the
framework's own registers its method on import, and `methods()` imports them all, by name, so that
no module imports a plug-in by name and each method's code digest covers its own module."""

import importlib
import pkgutil
from pathlib import Path

from expril.plugins.base import Method
from expril.workflow import grids

FRAMEWORK = {"base", "context", "gate", "registry", "runner"}
_METHODS = {}


def register(method):
    """Add a method (an instance of a Method subclass); its module calls this once."""
    if not isinstance(method, Method):
        raise TypeError(f"register() takes an instance of expril.plugins.base.Method, got {method!r}")
    known = _METHODS.get(method.name)
    if known is not None and type(known).__module__ != type(method).__module__:
        raise ValueError(
            f"plug-in {type(method).__module__} registers method {method.name!r}, which "
            f"{type(known).__module__} already registers"
        )
    for other in _METHODS.values():
        clash = sorted(set(other.reports) & set(method.reports))
        if clash and type(other).__module__ != type(method).__module__:
            raise ValueError(
                f"plug-in {type(method).__module__} reports {', '.join(clash)}, which "
                f"{type(other).__module__} already reports"
            )
    _METHODS[method.name] = method
    return method


def methods():
    """Every plug-in method, by name, in the order of their modules' names."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name not in FRAMEWORK:
            importlib.import_module(f"expril.plugins.{module.name}")
    return dict(sorted(_METHODS.items(), key=lambda item: type(item[1]).__module__))


def checking():
    """The method whose published cells are rerun against a published study (Method.checks_published)."""
    found = [m for m in methods().values() if m.checks_published]
    if len(found) != 1:
        raise ValueError(
            "exactly one plug-in method must set checks_published (its published cells are rerun before "
            f"mixing a published study's runs), found {', '.join(m.name for m in found) or 'none'}"
        )
    return found[0]


def reported():
    """{compared method: the plug-in method that reports it}: most report one model, under their name."""
    return {report: method for method in methods().values() for report in method.reports}


def family(name):
    """The tuning grid a compared method chooses from: ExPriL's (grids.FAMILY), or the grid of the
    plug-in method that reports it, its name."""
    method = reported().get(name)
    return method.name if method else grids.family(name)


def noise_knobs(family):
    """The knobs of a tuning grid's family that act on the noise alone: its plug-in method's
    (Method.noise_knobs), or ExPriL's (grids.NOISE_KNOBS)."""
    method = methods().get(family)
    return method.noise_knobs if method else grids.NOISE_KNOBS


def step(rule):
    """(method, step) of the plug-in rule `rule`."""
    for method in methods().values():
        for s in method.steps:
            if s.rule == rule:
                return method, s
    raise ValueError(f"no plug-in method has a step {rule!r}")

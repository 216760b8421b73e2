"""The registry of plug-in methods (expril.plugins.base): each module of expril/plugins/ but the
framework's own registers its method on import, and `methods()` imports them all, by name, so that
no module imports a plug-in by name and each method's code digest covers its own module. A user's
plug-in modules from outside the package (config: comparison: plugins) join them in every process
of the workflow: `use` imports them where it plans, and names them to its jobs (OUTSIDE)."""

import importlib
import importlib.util
import os
import pkgutil
import sys
from pathlib import Path

from expril.plugins.base import Method
from expril.privacy.base import MECHANISMS
from expril.workflow import grids

FRAMEWORK = {"base", "context", "gate", "registry", "runner"}
# The plug-in files from outside the package that `methods()` imports too, os.pathsep-separated: set
# by `use` in the process that plans the workflow (rules/common.smk), whose jobs inherit it.
OUTSIDE = "EXPRIL_PLUGINS"
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
    """Every plug-in method, by name, in the order of their modules' names: expril/plugins/'s and
    those of the files OUTSIDE names."""
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name not in FRAMEWORK:
            name = f"expril.plugins.{module.name}"
            _imported(name, lambda name=name: importlib.import_module(name))
    for path in filter(None, os.environ.get(OUTSIDE, "").split(os.pathsep)):
        load(path)
    return dict(sorted(_METHODS.items(), key=lambda item: type(item[1]).__module__))


def use(paths):
    """Import the plug-in files `paths` (the configuration's `comparison: plugins`, relative to the
    working directory) beside expril/plugins/'s, in this process and, through OUTSIDE, in every
    process it starts (the jobs); each is refused, naming it, where it is missing or registers no
    method of its own. The plug-ins then pass the gate, the taint audit and the code digests as
    expril/plugins/'s do; the digest covers the file itself (not a module of the user's it imports)."""
    key = "config: comparison: plugins"
    if not isinstance(paths, list) or not all(isinstance(p, str) and p.endswith(".py") for p in paths):
        raise ValueError(f"{key}: expected a list of Python files (my_method.py), got {paths!r}")
    for path in paths:
        if not Path(path).is_file():
            raise ValueError(f"{key}: {path}: no such file (relative to {os.getcwd()})")
    os.environ[OUTSIDE] = os.pathsep.join(str(Path(p).resolve()) for p in paths)
    return methods()


def load(path):
    """Import the plug-in file `path` (outside the package) once, as expril.plugins.<its name>: the
    name an in-tree plug-in of that file would have, so that the gate's and the reports' messages
    name it alike, and one that no other plug-in may have."""
    path = Path(path).resolve()
    name = f"expril.plugins.{path.stem}"
    known = sys.modules.get(name)
    if known is not None and Path(known.__file__).resolve() == path:
        return
    if known is not None or (Path(__file__).parent / path.name).exists():
        raise ValueError(f"plug-in {path}: another plug-in module is named {name} (rename the file)")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        _imported(name, lambda: spec.loader.exec_module(module))
    except BaseException:
        del sys.modules[name]
        raise
    if not any(type(m).__module__ == name for m in _METHODS.values()):
        del sys.modules[name]
        raise ValueError(
            f"plug-in {path} registers no method: a plug-in module ends with "
            "expril.plugins.registry.register(<its Method subclass>())"
        )


def _imported(name, run):
    """Run the import of plug-in module `name`, refusing a mechanism it registers under the name of
    another module's (expril.privacy.base.register would silently replace it)."""
    before = dict(MECHANISMS)
    run()
    for key, cls in before.items():
        if MECHANISMS[key].__module__ != cls.__module__:
            MECHANISMS[key] = cls
            raise ValueError(f"plug-in {name} registers mechanism {key!r}, which {cls.__module__} already registers")


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

"""The version of the package code a workflow script runs, as a digest. Each script rule declares
it as a `params` entry, so Snakemake reruns the rule's jobs when that code changes: Snakemake's own
code trigger sees the script only, not the package modules the script imports.

What counts is followed by name from the script: the top-level functions, classes and
assignments of the package that the script uses, then those that these use, and so on, plus the
statements each reached module runs when imported (other than its imports of the package, whose
targets count only where used). Code is compared as parsed, without docstrings, so edits to
comments, docstrings or layout, or to code the script never reaches, rerun nothing (a new Python
version may unparse differently and rerun everything once). An import form this cannot follow is
an error naming the file, rather than a digest that silently misses code."""
import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
INIT = "__init__"


def _imports_package(node):
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "expril"
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == "expril" for a in node.names)


class _Module:
    """One parsed file: its top-level definitions by name, the rest of what it runs when imported,
    and what its package imports bind: {name: (module, None)} for a module, (module, name) for a
    name defined in one."""

    def __init__(self, path, text, package):
        self.path, self.units, self.runs, self.binds, self._sources = path, {}, [], {}, {}
        self.name = path.stem if path.parent == package else None  # None: a script, not a module
        tree = ast.parse(text, filename=str(path))
        for node in ast.walk(tree):  # docstrings do not count
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._bind(node, package)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.units.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for name in {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}:
                    self.units.setdefault(name, []).append(node)
            elif not (_imports_package(node) or isinstance(node, ast.Pass)):
                self.runs.append(node)

    def source(self, unit):
        """A unit's code as parsed (None: what the module runs on import), unparsed once."""
        if unit not in self._sources:
            self._sources[unit] = "\n".join(map(ast.unparse, self.runs if unit is None else self.units[unit]))
        return self._sources[unit]

    def _bind(self, node, package):
        if not _imports_package(node):
            return
        if isinstance(node, ast.Import) or node.level > 1:
            raise ValueError(f"{self.path}: line {node.lineno}: write package imports as `from expril import "
                             f"module` or `from .module import name`, so that the code digest can follow them")
        base = (node.module or "").removeprefix("expril").lstrip(".")
        for alias in node.names:
            target = (base, alias.name) if base else (alias.name, None)
            if not (package / f"{target[0]}.py").is_file():
                raise ValueError(f"{self.path}: line {node.lineno}: the package has no module {target[0]!r}")
            self.binds[alias.asname or alias.name] = target


@cache
def _parse(path, text, package):
    return _Module(path, text, package)


def _module(path, package):
    return _parse(Path(path).resolve(), Path(path).read_text(), Path(package).resolve())


def _package(package):
    """Every module of the package by name, parsed (cached on each file's text: edits are seen)."""
    return {path.stem: _module(path, package) for path in Path(package).glob("*.py")}


def _references(module, nodes):
    """(module, name) pairs the nodes use: `m.f` and `f` bound by an import, or a top-level name
    of this module; name None for a package module used whole (as a value)."""
    walked = [n for top in nodes for n in ast.walk(top)]
    attribute_of = {id(n.value): (module.binds[n.value.id][0], n.attr) for n in walked
                    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                    and module.binds.get(n.value.id, ("", ""))[1] is None}
    for n in walked:
        if isinstance(n, ast.Name):
            if id(n) in attribute_of:
                yield attribute_of[id(n)]
            elif n.id in module.binds:
                yield module.binds[n.id]
            elif n.id in module.units and module.name:
                yield module.name, n.id


def reached(script, package=PACKAGE):
    """The package code `script` runs: ({(module, top-level name)}, {modules imported})."""
    return _reach(_module(script, package), _package(package))


def _reach(script, package):
    units, modules = set(), set()
    todo = [(script, script.runs + [n for nodes in script.units.values() for n in nodes])]
    while todo:
        module, nodes = todo.pop()
        for name, unit in _references(module, nodes):
            target = package[name]
            if name not in modules:
                modules.add(name)
                todo.append((target, target.runs))
            for u in list(target.units) if unit is None else [unit]:
                if u in target.binds:  # imported into that module: follow the import
                    todo.append((target, [ast.Name(u)]))
                elif u not in target.units:
                    raise ValueError(f"{target.path} has no top-level {u!r} (reached from {script.path})")
                elif (name, u) not in units:
                    units.add((name, u))
                    todo.append((target, target.units[u]))
    return units, modules | ({INIT} if modules else set())


def script_digest(script, package=PACKAGE):
    """sha256 of the package code `script` runs (see the module docstring)."""
    return _digest(_module(script, package), tuple(sorted(_package(package).items())))


@cache
def _digest(script, package):
    """Cached on the parsed files (the same objects while their texts are unchanged): the
    workflow computes each script's digest once per module that includes its rules."""
    modules = dict(package)
    units, imported = _reach(script, modules)
    parts = [f"{m} runs\n{modules[m].source(None)}" for m in sorted(imported)]
    parts += [f"{m}.{u}\n{modules[m].source(u)}" for m, u in sorted(units)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

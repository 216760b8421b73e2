"""The version of the package code a workflow script runs, as a digest. Each script rule declares
it as a `params` entry, so Snakemake reruns the rule's jobs when that code changes: Snakemake's own
code trigger sees the script only, not the package modules the script imports.

What counts: all that each package module the script's process imports runs on import, and the
package's functions and constants the script uses, those these use, and so on. A module counts
once a reached import statement names it (with the package's `__init__`), even if none of its
names are used. What runs on import is every top-level statement but two kinds: a function's body
runs only when called, so it counts where the function is used (its decorators, defaults and
annotations run on import); an assignment of a literal to plain names runs no code, so it counts
where a name is used. Any other assignment counts on import, side effects or not (a safe
over-approximation), and so does a class, methods included: they are reached through objects
(instances, a registry), which names do not follow. A function reached only through a value
built at run time (a registry of functions, `getattr`) would be missed.

Code is compared as parsed, without docstrings, so edits to comments, docstrings or layout, or to
functions and constants the script never reaches, rerun nothing (a new Python version may unparse
differently and rerun everything once). An import form this cannot follow is an error naming the
file, rather than a digest that silently misses code."""

import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent


def _key(path, package):
    """A package module's dotted name below the package ('privacy.noise'; 'privacy' for its
    __init__, '' for the package's own); None for a file outside the package (a script)."""
    if not path.is_relative_to(package):
        return None
    parts = path.relative_to(package).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _ancestors(key):
    """The modules importing `key` runs, outermost first: every enclosing package's __init__."""
    parts = key.split(".") if key else []
    return [".".join(parts[:i]) for i in range(len(parts) + 1)]


def _imports_package(node):
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "expril"
    return isinstance(node, ast.Import) and any(a.name.split(".")[0] == "expril" for a in node.names)


def _is_module(key, package):
    path = package.joinpath(*key.split(".")) if key else package
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _literal(node):
    """Whether evaluating the expression runs no code: a literal that builds (not `set()`, a call)."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError):  # not a literal, or one that raises (an unhashable key)
        return False
    return not any(isinstance(n, ast.Call) for n in ast.walk(node))


def _on_import(node):
    """What of a top-level statement runs when its module is imported (see the module docstring)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts = (
            node.decorator_list
            + [node.returns]
            + [n.annotation if isinstance(n, ast.arg) else n for n in ast.iter_child_nodes(node.args)]
        )
        return [p for p in parts if p is not None and not _literal(p)]
    if (
        isinstance(node, ast.Pass)
        or isinstance(node, ast.Assign)
        and _literal(node.value)
        and all(isinstance(t, ast.Name) for t in node.targets)
    ):
        return []
    return [node]


class _Module:
    """One parsed file: its top-level definitions by name, what it runs when imported, and what its
    package imports bind: {name: (module, None)} for a module, (module, name) for a name defined
    in one."""

    def __init__(self, path, text, package):
        self.path, self.units, self.runs, self.binds, self._sources = path, {}, [], {}, {}
        self.name = _key(path, package)  # None: a script, not a module
        self.package = package
        tree = ast.parse(text, filename=str(path))
        for node in ast.walk(tree):  # docstrings do not count
            body = getattr(node, "body", None)
            if (
                isinstance(body, list)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
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
            self.runs += _on_import(node)

    def source(self, unit):
        """A unit's code as parsed (None: what the module runs on import), unparsed once."""
        if unit not in self._sources:
            self._sources[unit] = "\n".join(map(ast.unparse, self.runs if unit is None else self.units[unit]))
        return self._sources[unit]

    def target(self, node, alias):
        """(module, name) a package import binds to alias; name None for a module."""
        if node.level:
            raise ValueError(
                f"{self.path}: line {node.lineno}: write package imports absolutely (`from "
                f"expril.privacy import noise`), so that the code digest can follow them"
            )
        base = node.module.removeprefix("expril").lstrip(".")
        whole = f"{base}.{alias.name}" if base else alias.name
        if _is_module(whole, self.package):
            return whole, None
        # The package's __init__ files define nothing to import: a name from a package is a module.
        if not _is_module(base, self.package) or self.package.joinpath(*base.split(".")).is_dir():
            raise ValueError(f"{self.path}: line {node.lineno}: the package has no module {whole!r}")
        return base, alias.name

    def _bind(self, node, package):
        if not _imports_package(node):
            return
        if isinstance(node, ast.Import):
            raise ValueError(
                f"{self.path}: line {node.lineno}: write package imports as `from expril.privacy import "
                f"noise` or `from expril.privacy.noise import name`, so that the code digest can "
                f"follow them"
            )
        for alias in node.names:
            self.binds[alias.asname or alias.name] = self.target(node, alias)


@cache
def _parse(path, text, package):
    return _Module(path, text, package)


def _module(path, package):
    return _parse(Path(path).resolve(), Path(path).read_text(), Path(package).resolve())


def _package(package):
    """Every module of the package by name, parsed (cached on each file's text: edits are seen)."""
    modules = (_module(path, package) for path in Path(package).rglob("*.py"))
    return {module.name: module for module in modules}


def _references(module, nodes, package):
    """(module, name) pairs the nodes use: `m.f` and `f` bound by an import, a top-level name of
    this module, each name of a package module used whole (as a value); name None for a module an
    import statement runs, its names used or not."""
    walked = [n for top in nodes for n in ast.walk(top)]
    attribute_of = {
        id(n.value): (module.binds[n.value.id][0], n.attr)
        for n in walked
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and module.binds.get(n.value.id, ("", ""))[1] is None
    }
    for n in walked:
        if _imports_package(n):
            yield from ((module.target(n, alias)[0], None) for alias in n.names)
        elif isinstance(n, ast.Name):
            if id(n) in attribute_of:
                yield attribute_of[id(n)]
            elif n.id in module.binds:
                name, unit = module.binds[n.id]
                yield from [(name, unit)] if unit else ((name, u) for u in package[name].units)
            elif n.id in module.units and module.name is not None:
                yield module.name, n.id


def reached(script, package=PACKAGE):
    """The package code `script` runs: ({(module, top-level name)}, {modules imported})."""
    return _reach(_module(script, package), _package(package))


def _reach(script, package):
    units, modules = set(), set()
    todo = [(script, script.runs + [n for nodes in script.units.values() for n in nodes])]
    while todo:
        module, nodes = todo.pop()
        for name, unit in _references(module, nodes, package):
            for imported in _ancestors(name):  # importing a module runs its packages' __init__ first
                if imported not in modules:
                    modules.add(imported)
                    todo.append((package[imported], package[imported].runs))
            target = package[name]
            if unit is None:
                continue
            if unit in target.binds:  # imported into that module: follow the import
                todo.append((target, [ast.Name(unit)]))
            elif unit not in target.units:
                raise ValueError(f"{target.path} has no top-level {unit!r} (reached from {script.path})")
            elif (name, unit) not in units:
                units.add((name, unit))
                todo.append((target, target.units[unit]))
    return units, modules


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


def plugin_digest(path, package=PACKAGE):
    """sha256 of a plug-in method's module and the package code it runs (rules/plugins.smk):
    `script_digest`'s for a module of the package; for a file outside it (config: comparison:
    plugins), whose code no Snakemake trigger sees, that file's code as parsed too."""
    digest, module = script_digest(path, package), _module(path, package)
    if module.name is not None:
        return digest
    own = "\n".join(module.source(unit) for unit in [None, *sorted(module.units)])
    return hashlib.sha256(f"{digest}\n{own}".encode()).hexdigest()[:16]

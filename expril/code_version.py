"""The version of the package code a workflow script runs, as a digest. Each rule declares it as a
`params` entry, so Snakemake reruns the rule's jobs when that code changes: its own code trigger
sees the script only, not the modules the script imports.

What counts: whole modules, except `steps`, which holds one entry point per rule and so counts
only the functions a script calls and the steps functions those use. Code is compared as parsed
(ast.unparse), so edits to comments or layout rerun nothing. Code reached through a name built
at run time would be missed; the package has none."""
import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
HUB = "steps"


def _parse(path):
    return _tree(Path(path).read_text())


@cache
def _tree(text):
    return ast.parse(text)


@cache
def _normalised(text):
    return ast.unparse(_tree(text))


def _package_imports(tree):
    """{name bound in this file: package module it refers to} for `from . import m`,
    `from .m import f` and `from expril(.m) import ...`, wherever the import statement is."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level == 1 or (node.module or "").split(".")[0] == "expril"):
            base = (node.module or "").removeprefix("expril").lstrip(".")
            for alias in node.names:
                bound[alias.asname or alias.name] = base or alias.name
    return bound


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def reached(script, package=PACKAGE):
    """(steps functions, other modules) of the package that `script` can run."""
    script_tree, hub_tree = _parse(script), _parse(package / f"{HUB}.py")
    hub_functions = {n.name: n for n in hub_tree.body if isinstance(n, ast.FunctionDef)}
    hub_imports = _package_imports(hub_tree)

    # The steps functions the script calls, then those they call in turn.
    imported = _package_imports(script_tree)
    functions = {n.attr for n in ast.walk(script_tree)
                 if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and imported.get(n.value.id) == HUB}
    todo = list(functions)
    while todo:
        new = _names(hub_functions[todo.pop()]) & hub_functions.keys() - functions
        functions |= new
        todo += new

    # The modules those functions and the script use, with every module they import.
    todo = [m for m in imported.values() if m != HUB]
    todo += [hub_imports[name] for f in functions for name in _names(hub_functions[f]) if name in hub_imports]
    modules = set()
    while todo:
        module = todo.pop()
        if module not in modules:
            modules.add(module)
            todo += _package_imports(_parse(package / f"{module}.py")).values()
    return functions, modules


def script_digest(script, package=PACKAGE):
    """sha256 of the package code `script` can run (see the module docstring)."""
    functions, modules = reached(script, package)
    hub_tree = _parse(package / f"{HUB}.py")
    hub = [n for n in hub_tree.body if not isinstance(n, ast.FunctionDef) or n.name in functions] if functions else []
    parts = [ast.unparse(n) for n in hub]
    parts += [f"# {m}\n{_normalised((package / f'{m}.py').read_text())}" for m in sorted(modules)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

"""No import circles through littlebird/training: no module imports one that imports it back, directly or
through others, counting imports inside functions and under ``TYPE_CHECKING`` (a circle there still ties the
two modules' layouts together and breaks as soon as either import moves to the top)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def package_modules() -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is a package)}`` for every module of ``littlebird``."""
    modules = {}
    for path in (ROOT / "littlebird").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def import_graph(modules: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """Each module's imports of other ``littlebird`` modules, from every import statement in its file."""
    graph = {}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join([*here[: len(here) - node.level + 1], *([node.module] if node.module else [])]
                                ) if node.level else node.module
                # `from X import y`: the submodule X.y where y is one, else X itself
                targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                               for alias in node.names)
        graph[name] = set()
        for target in targets:
            parts = target.split(".")
            owner = next((".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in modules),
                         None)
            if owner is not None and owner != name:
                graph[name].add(owner)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_circle_passes_through_the_training_package():
    through_training = [c for c in circles(import_graph(package_modules()))
                        if any(m.startswith("littlebird.training") for m in c)]
    assert not through_training, through_training


def test_the_circle_finder_sees_imports_inside_functions_and_under_type_checking(tmp_path):
    files = {"p/__init__.py": "", "p/a.py": "from . import b\n",
             "p/b.py": "def f():\n    from .a import x\n",
             "p/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.d import y\n",
             "p/d.py": "from .c import z\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = {"p": (tmp_path / "p/__init__.py", True),
               **{f"p.{m}": (tmp_path / f"p/{m}.py", False) for m in "abcd"}}
    assert circles(import_graph(modules)) in ([["p.a", "p.b"], ["p.c", "p.d"]], [["p.c", "p.d"], ["p.a", "p.b"]])

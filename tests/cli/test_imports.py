"""What the package imports: no import circles, and a command line that loads what its command needs.

No module imports one that imports it back, directly or through others, counting imports inside functions and
under ``TYPE_CHECKING`` (a circle there still ties the two modules' layouts together and breaks as soon as either
import moves to the top). ``littlebird --help`` loads neither torch nor transformers, and ``littlebird ask`` on a
text file loads none of the web page's packages and keeps no layer inputs (no forward hook), each checked in a
fresh interpreter, so that what the test session has already imported does not count."""

import ast
import json
import os
import subprocess
import sys
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
                base = (
                    ".".join([*here[: len(here) - node.level + 1], *([node.module] if node.module else [])])
                    if node.level
                    else node.module
                )
                # `from X import y`: the submodule X.y where y is one, else X itself
                targets.update(
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
                )
        graph[name] = set()
        for target in targets:
            parts = target.split(".")
            owner = next(
                (".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in modules), None
            )
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


def test_no_import_circle_in_the_package():
    graph = import_graph(package_modules())
    assert {"littlebird.app.asking", "littlebird.app.explorer.explaining", "littlebird.training.data"} <= set(graph)
    assert "littlebird.app.asking" in graph["littlebird.app.explorer.explaining"]  # the finder sees real imports
    assert not circles(graph), circles(graph)


def run_fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter in the repository; it prints one JSON line last, returned here."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_help_loads_neither_torch_nor_transformers():
    loaded = run_fresh("""
import contextlib, io, json, sys
from littlebird.cli import main
for argv in (["--help"], ["ask", "--help"], ["train", "--help"]):
    with contextlib.redirect_stdout(io.StringIO()) as shown, contextlib.suppress(SystemExit):
        main(argv)
    assert "usage: littlebird" in shown.getvalue(), argv
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
""")
    assert "littlebird" in loaded
    assert not {"torch", "transformers", "gradio", "numpy"} & set(loaded)


def test_asking_about_a_text_file_loads_no_web_page_and_keeps_no_layer_inputs(tmp_path):
    document = tmp_path / "lighthouse.txt"
    document.write_text(
        "The lighthouse at Saint Ovidio was first lit in 1843 by its keeper, Anna Moreau.\n", encoding="utf-8"
    )
    seen = run_fresh(f"""
import contextlib, io, json, sys
import torch
hooked = []
register = torch.nn.Module.register_forward_hook
def recording(module, *args, **kwargs):
    hooked.append(type(module).__name__)
    return register(module, *args, **kwargs)
torch.nn.Module.register_forward_hook = recording
from littlebird.cli import main
with contextlib.redirect_stdout(io.StringIO()) as shown:
    code = main(["ask", {str(document)!r}, "Who first lit the lighthouse?", "--json"])
print(json.dumps({{"code": code, "answer": json.loads(shown.getvalue())["answer"], "hooked": hooked,
                  "modules": sorted(m for m in sys.modules if m.split(".")[0] in ("gradio", "plotly")
                                    or m.startswith("littlebird.app.explorer"))}}))
""")
    assert seen["code"] == 0 and seen["answer"]  # it answered, from the shipped checkpoint
    assert seen["hooked"] == [] and seen["modules"] == []


def test_the_circle_finder_sees_imports_inside_functions_and_under_type_checking(tmp_path):
    files = {
        "p/__init__.py": "",
        "p/a.py": "from . import b\n",
        "p/b.py": "def f():\n    from .a import x\n",
        "p/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.d import y\n",
        "p/d.py": "from .c import z\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    modules = {"p": (tmp_path / "p/__init__.py", True), **{f"p.{m}": (tmp_path / f"p/{m}.py", False) for m in "abcd"}}
    assert circles(import_graph(modules)) in ([["p.a", "p.b"], ["p.c", "p.d"]], [["p.c", "p.d"], ["p.a", "p.b"]])

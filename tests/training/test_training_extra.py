"""Training runs with ``pip install ".[train]"`` alone: listing the stages and planning every recipe load
none of the app's packages, and the one step that reads pages through the app's cleaner loads only packages
that the train extra names too.

Each check runs in a fresh interpreter, so what the test session has already imported does not count."""

import importlib.metadata
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
# The app's own packages (the page, its plots, PDF and Word files): training never loads them.
APP_ONLY = {"gradio", "plotly", "pypdfium2", "mammoth"}
# The cleaner's: in the train extra for the page-tables step, and loaded by nothing else.
CLEANER = {"trafilatura", "lxml", "lxml_html_clean"}


def loaded_top_level_modules(code: str) -> set[str]:
    """The top-level modules a fresh interpreter holds after running ``code`` in the repository."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def extra_names(extra: str) -> set[str]:
    """The distribution names an extra of pyproject.toml lists, normalised as pip compares them."""
    return {_normalise(Requirement(line).name) for line in _project()["optional-dependencies"][extra]}


def core_names() -> set[str]:
    """The core dependencies and, as installed here, everything they require in turn (transformers brings
    huggingface_hub, which the app extra also names)."""
    names, todo = set(), [Requirement(line) for line in _project()["dependencies"]]
    while todo:
        requirement = todo.pop()
        name = _normalise(requirement.name)
        if name in names or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        names.add(name)
        try:
            todo += [Requirement(line) for line in importlib.metadata.requires(requirement.name) or []]
        except importlib.metadata.PackageNotFoundError:
            pass
    return names


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def test_listing_the_stages_and_planning_every_recipe_load_no_app_package():
    code = """
from pathlib import Path
from littlebird.training.recipe import STAGES, describe_plan, load_recipe
for kind in STAGES.values():
    kind.options_class()
for path in sorted(Path("recipes").glob("*.yaml")):
    recipe = load_recipe(path, runs="/nonexistent-runs", require_data=False)
    describe_plan(recipe, recipe.stages)
"""
    loaded = loaded_top_level_modules(code)
    assert "littlebird" in loaded
    assert not loaded & (APP_ONLY | CLEANER), sorted(loaded & (APP_ONLY | CLEANER))


def test_the_train_command_lists_its_stages_without_app_packages():
    code = """
import contextlib, io
from littlebird.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["train", "--list-stages"]) == 0
"""
    loaded = loaded_top_level_modules(code)
    assert not loaded & (APP_ONLY | CLEANER), sorted(loaded & (APP_ONLY | CLEANER))


def test_the_page_tables_step_loads_only_packages_of_the_train_extra():
    code = """
from littlebird.training.page_tables import clean_page
clean_page({"title": "Toy", "html": "<p>Toy is a small country.</p><table><tr><td>1990</td></tr></table>"})
"""
    loaded = loaded_top_level_modules(code)
    assert "trafilatura" in loaded  # the cleaner ran
    distributions = importlib.metadata.packages_distributions()
    loaded_names = {_normalise(name) for module in loaded for name in distributions.get(module, [])}
    app_only_loaded = (loaded_names & extra_names("app")) - extra_names("train") - core_names()
    assert not app_only_loaded, f"the page-tables step needs {sorted(app_only_loaded)}: add them to the train extra"

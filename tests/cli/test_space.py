"""The Space folder: what it holds, what Git LFS stores, and the app served from it alone answering questions."""

from __future__ import annotations

import fnmatch
import importlib.metadata
import json
import os
import re
import signal
import site
import subprocess
import sys
import sysconfig
import threading
import time
import tomllib
from pathlib import Path

import pytest
import yaml

from littlebird import space
from littlebird.space import (
    HARDWARE,
    LFS_ATTRIBUTES,
    LFS_THRESHOLD_BYTES,
    TORCH_VERSION,
    absolute_links,
    push_space,
    readme_images,
    repository_url,
    space_readme,
    write_space,
)

ROOT = Path(__file__).resolve().parents[2]


def files_in(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` outside ``.git``, as its relative path and size."""
    return {
        p.relative_to(folder).as_posix(): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(folder).parts
    }


def lfs_patterns(folder: Path) -> list[str]:
    """The patterns ``.gitattributes`` gives the LFS filter."""
    lines = (folder / ".gitattributes").read_text(encoding="utf-8").splitlines()
    return [
        line.split()[0] for line in lines if line.strip() and not line.startswith("#") and line.endswith(LFS_ATTRIBUTES)
    ]


def stored_in_lfs(relative: str, patterns: list[str]) -> bool:
    """Whether git would apply a pattern to ``relative``: one without a slash matches the file's name at any depth."""
    return any(
        fnmatch.fnmatchcase(relative, p.lstrip("/"))
        if "/" in p
        else fnmatch.fnmatchcase(relative.rsplit("/", 1)[-1], p)
        for p in patterns
    )


def requirement_names(requirements: Path) -> set[str]:
    """The distributions ``requirements.txt`` names, normalised as pip compares them."""
    names = (
        re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line.strip())
        for line in requirements.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )
    return {normalised(match.group(0)) for match in names if match}


def normalised(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


@pytest.fixture()
def folder(tmp_path) -> Path:
    return write_space(tmp_path / "space")


def test_the_folder_holds_what_the_space_runs_and_nothing_else(folder):
    files = files_in(folder)
    for needed in (
        "app.py",
        "requirements.txt",
        "packages.txt",
        "README.md",
        ".gitattributes",
        "LICENSE",
        "littlebird/__init__.py",
        "littlebird/app/ui.py",
        "assets/littlebird-qa/config.json",
        "assets/examples/examples.json",
        "docs/screenshot.png",
    ):  # the README's screenshot, so the page shows it
        assert needed in files, needed
    shards = [f for f in files if f.startswith("assets/littlebird-qa/") and f.endswith(".safetensors")]
    assert len(shards) == 4
    assert not [f for f in files if re.search(r"(^|/)(__pycache__|tests|benchmarks|scripts)/|\.pyc$", f)]
    assert not [f for f in files if f.startswith("docs/") and f != "docs/screenshot.png"]


def test_the_readme_carries_the_space_front_matter_then_the_repository_readme(folder):
    text = (folder / "README.md").read_text(encoding="utf-8")
    match = re.match(r"\A---\n(.*?)\n---\n\n", text, re.DOTALL)
    assert match, "the Space README starts with its front matter"
    assert yaml.safe_load(match.group(1)) == {
        "title": "LittleBird QA",
        "emoji": "🐦",
        "colorFrom": "indigo",
        "colorTo": "green",
        "sdk": "gradio",
        "sdk_version": importlib.metadata.version("gradio"),
        "python_version": "3.11",
        "app_file": "app.py",
        "pinned": False,
        "license": "apache-2.0",
        "short_description": "Question answering over long Korean and English documents",
        "suggested_hardware": "cpu-basic",
    }
    body = text[match.end() :]
    assert body.startswith("# LittleBird QA\n") and "\n---\n" not in body[:200]
    readme = re.sub(r"\A---\n.*?\n---\n", "", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.DOTALL).strip()
    repository = repository_url(ROOT / "pyproject.toml")
    assert body.strip() == absolute_links(readme, repository, kept=tuple(readme_images(readme)))


def test_the_space_readme_links_into_the_repository_but_shows_its_own_images(folder):
    body = (folder / "README.md").read_text(encoding="utf-8")
    repository = repository_url(ROOT / "pyproject.toml")
    assert repository.startswith("https://github.com/")
    targets = re.findall(r"""(?:\]\(|href="|src=")([^)"\s]+)""", body)
    relative = [t for t in targets if not re.match(r"\w+:|#", t)]
    assert relative == ["docs/screenshot.png"] and (folder / "docs" / "screenshot.png").is_file()
    assert f"]({repository}/blob/main/docs/architecture.md#the-app)" in body
    assert f'src="{repository}/raw/main/docs/explorer/reading-map.png"' in body
    assert f"]({repository}/blob/main/LICENSE)" in body


@pytest.mark.parametrize("front_matter", ["", "---\ntitle: Old\nsdk: gradio\n---\n\n"], ids=["without", "with"])
def test_the_readme_body_loses_only_a_leading_front_matter(tmp_path, front_matter):
    body = "# LittleBird QA\n\nText.\n\n---\n\nA rule, not front matter.\n"
    (tmp_path / "README.md").write_text(front_matter + body, encoding="utf-8")
    text = space_readme(tmp_path / "README.md")
    assert text.endswith("---\n\n" + body) and text.count("title:") == 1


@pytest.mark.parametrize(
    "hardware, torch_lines, extra, suggested",
    [
        (
            "cpu",
            ["--extra-index-url https://download.pytorch.org/whl/cpu", f"torch=={TORCH_VERSION}+cpu"],
            [],
            "cpu-basic",
        ),
        ("zero-gpu", [f"torch=={TORCH_VERSION}"], ["spaces"], "zero-a10g"),
        ("gpu", [f"torch=={TORCH_VERSION}"], [], "t4-small"),
    ],
)
def test_requirements_are_torch_for_the_hardware_then_the_dependencies_and_the_app_extra(
    tmp_path, hardware, torch_lines, extra, suggested
):
    from littlebird.cli import main

    assert main(["space", str(tmp_path / "space"), "--hardware", hardware, "--root", str(ROOT)]) == 0
    folder = tmp_path / "space"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = [line for line in (folder / "requirements.txt").read_text().splitlines() if not line.startswith("#")]
    others = [
        r for r in [*project["dependencies"], *project["optional-dependencies"]["app"]] if not r.startswith("torch")
    ]
    assert lines == [*torch_lines, *others, *extra]
    assert not any(line.startswith(("accelerate", "pytest", "fpdf2")) for line in lines)
    assert f"suggested_hardware: {suggested}\n" in (folder / "README.md").read_text(encoding="utf-8")


def test_packages_txt_installs_tesseract_with_its_korean_data_as_ci_does(folder):
    packages = (folder / "packages.txt").read_text().split()
    assert packages == ["tesseract-ocr", "tesseract-ocr-kor"]
    ci_apt = next(line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "apt-get install" in line)
    assert set(packages) <= set(ci_apt.split())  # the Space reads scans with what CI tests them with


def test_the_cpu_pin_takes_only_the_cpu_only_wheel():
    from packaging.requirements import Requirement

    pin = Requirement(HARDWARE["cpu"].torch[-1])
    assert pin.name == "torch" and pin.specifier.contains(f"{TORCH_VERSION}+cpu")
    assert not pin.specifier.contains(TORCH_VERSION)  # PyPI's Linux wheel, which brings the CUDA libraries
    assert not pin.specifier.contains(f"{TORCH_VERSION}+cu128")


def test_an_unknown_hardware_is_refused(tmp_path):
    with pytest.raises(ValueError, match="hardware must be one of cpu, zero-gpu, gpu"):
        write_space(tmp_path / "space", hardware="tpu")
    assert not (tmp_path / "space").exists()


def test_gitattributes_sends_every_large_or_binary_file_through_lfs(folder):
    (folder / "assets" / "examples" / "big.jpg").write_bytes(b"\xff\xd8" + bytes(LFS_THRESHOLD_BYTES))
    (folder / "assets" / "examples" / "big notes.txt").write_text("x" * (LFS_THRESHOLD_BYTES + 1))
    (folder / ".gitattributes").write_text(space.space_gitattributes(folder), encoding="utf-8")
    patterns = lfs_patterns(folder)
    for relative, size in files_in(folder).items():
        if size > LFS_THRESHOLD_BYTES or b"\0" in (folder / relative).read_bytes()[:8000]:
            assert stored_in_lfs(relative, patterns), f"{relative} ({size:,} bytes) is not stored in LFS"
    assert stored_in_lfs("assets/littlebird-qa/model-00001-of-00004.safetensors", patterns)
    assert not stored_in_lfs("app.py", patterns) and not stored_in_lfs("assets/examples/examples.json", patterns)


def test_a_foreign_folder_is_refused_and_an_earlier_space_is_rewritten(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="exists and is not empty"):
        write_space(foreign)
    assert files_in(foreign) == {"notes.txt": 4}

    earlier = write_space(tmp_path / "space")
    (earlier / "stale.py").write_text("left from an older tree")
    (earlier / ".git").mkdir()
    (earlier / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert write_space(earlier) == earlier
    assert not (earlier / "stale.py").exists() and (earlier / ".git" / "HEAD").is_file()
    assert (earlier / "app.py").is_file()


def test_a_folder_overlapping_the_sources_is_refused(tmp_path):
    with pytest.raises(ValueError, match="overlaps the files"):
        write_space(ROOT / "assets" / "littlebird-qa" / "space")
    with pytest.raises(ValueError, match="not a LittleBird QA checkout"):
        write_space(tmp_path / "space", root=tmp_path)


def test_push_space_creates_the_gradio_space_and_uploads_the_folder(folder, monkeypatch):
    calls = []

    class RecordingApi:
        def __init__(self, token=None):
            calls.append(("init", token))

        def create_repo(self, repo_id, **options):
            calls.append(("create_repo", repo_id, options))

        def upload_folder(self, **options):
            calls.append(("upload_folder", options))
            return "commit"

    monkeypatch.setattr(space, "HfApi", RecordingApi)
    assert push_space(folder, "owner/littlebird-qa", token="hf_x") == "commit"
    assert calls[:2] == [
        ("init", "hf_x"),
        ("create_repo", "owner/littlebird-qa", {"repo_type": "space", "space_sdk": "gradio", "exist_ok": True}),
    ]
    upload = calls[2][1]
    assert (upload["repo_id"], upload["folder_path"], upload["repo_type"]) == (
        "owner/littlebird-qa",
        str(folder),
        "space",
    )
    with pytest.raises(ValueError, match="not a Space folder"):
        push_space(folder.parent, "owner/littlebird-qa")


# Runs app.py as `python app.py` does (its folder first on sys.path) in an isolated interpreter (-I: no
# PYTHONPATH, no user site, no working directory on the path), recording which top-level modules the folder's
# own code imports. After the server stops (SIGINT), it writes what it saw to the file named by argv[1].
LAUNCHER = """
import builtins, faulthandler, json, os, runpy, signal, sys

faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for every thread's stack if exit hangs
# A process started in the background by a shell without job control (nohup ... &) inherits SIGINT ignored, and
# Python then installs no KeyboardInterrupt for it: the SIGINT that stops the app would be lost.
signal.signal(signal.SIGINT, signal.default_int_handler)

folder = os.getcwd()
sys.path.insert(0, folder)
report, sys.argv = sys.argv[1], ["app.py"]
imported = set()
real_import = builtins.__import__

def recording_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__file__") or ""
    # A real file of the folder: jinja2's templates, for one, run as "<template>", which abspath puts in the cwd.
    if level == 0 and os.path.isfile(importer) and os.path.abspath(importer).startswith(folder + os.sep):
        imported.add(name.partition(".")[0])
    return real_import(name, globals, locals, fromlist, level)

builtins.__import__ = recording_import
try:
    runpy.run_path("app.py", run_name="__main__")
finally:
    import littlebird.app.models
    def location(module):
        return getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", [])), None)
    with open(report, "w") as file:
        json.dump({"littlebird": littlebird.__file__, "checkpoint": littlebird.app.models.DEFAULT_CHECKPOINT,
                   "sys_path": sys.path,
                   "imported": {name: location(sys.modules[name]) for name in imported if name in sys.modules}}, file)
"""


def site_packages() -> list[str]:
    return sorted({*site.getsitepackages(), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})


@pytest.mark.slow
@pytest.mark.parametrize("hardware", list(HARDWARE))
def test_the_app_served_from_the_folder_alone_answers_and_imports_only_its_requirements(tmp_path, hardware):
    from gradio_client import Client

    from tests.support.ui import free_port

    folder = write_space(tmp_path / "space", hardware=hardware)
    examples = json.loads((folder / "assets" / "examples" / "examples.json").read_text(encoding="utf-8"))["examples"]
    iss = next(e for e in examples if e["id"] == "en-iss")
    question = next(q for q in iss["questions"] if q["question"] == "Who was the American commander of Expedition 1?")
    document = (folder / "assets" / "examples" / iss["file"]).read_text(encoding="utf-8")

    port = free_port()
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LITTLEBIRD_CHECKPOINT")}
    env.update(
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_SERVER_PORT=str(port),
        HF_HUB_OFFLINE="1",
        GRADIO_ANALYTICS_ENABLED="False",
        OMP_NUM_THREADS=os.environ.get("LITTLEBIRD_TEST_THREADS", "2"),
    )
    started = time.monotonic()
    # -u: -I ignores PYTHONUNBUFFERED, and a buffered "Running on local URL" would never reach the pipe.
    app = subprocess.Popen(
        [sys.executable, "-I", "-u", "-c", LAUNCHER, str(report)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    running = threading.Event()

    def read_output():
        for line in app.stdout:
            output.append(line)
            if "Running on local URL" in line:
                running.set()

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()
    try:
        while not running.wait(1.0):
            assert app.poll() is None, "the app exited before serving:\n" + "".join(output[-40:])
            assert time.monotonic() - started < 300, "the app did not serve within 5 minutes:\n" + "".join(output[-40:])
        result = Client(f"http://127.0.0.1:{port}/", verbose=False).predict(
            document, question["question"], api_name="/answer"
        )
        app.send_signal(signal.SIGINT)  # gradio closes its server on KeyboardInterrupt, then the launcher reports
        try:
            app.wait(timeout=60)
        except subprocess.TimeoutExpired:
            app.send_signal(signal.SIGUSR1)  # every thread's stack, to show what holds the exit
            time.sleep(5)
            raise
    except BaseException:
        reader.join(timeout=5)  # an app that exited has printed all it will
        app.poll()
        print(f"the app (exit status {app.returncode}) printed:\n" + "".join(output[-200:]))  # shown with the failure
        raise
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(timeout=30)
        reader.join(timeout=10)

    assert result["answer"] == question["answer"] == "William Shepherd", result
    seen = json.loads(report.read_text())
    assert Path(seen["littlebird"]).is_relative_to(folder), seen["littlebird"]
    assert Path(seen["checkpoint"]) == folder / "assets" / "littlebird-qa"
    assert not [p for p in seen["sys_path"] if p and Path(p).resolve().is_relative_to(ROOT)], seen["sys_path"]

    installed = site_packages()
    third_party = {
        name
        for name, where in seen["imported"].items()
        if where and any(Path(where).is_relative_to(s) for s in installed)
    }
    assert {"torch", "transformers", "gradio", "kiwipiepy"} <= third_party, third_party
    distributions = importlib.metadata.packages_distributions()
    required = requirement_names(folder / "requirements.txt")
    missing = {
        name: distributions.get(name)
        for name in third_party
        if not {normalised(d) for d in distributions.get(name, [])} & required
    }
    assert not missing, f"the app imports modules whose distributions requirements.txt lacks: {missing}"

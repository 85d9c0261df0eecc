"""Graph encoders for the GLM, and the T5 one: the relative-position bias comes from the Levi graph.

:class:`GraphEncoder` is what the GLM needs from any backbone: final token states from token ids,
the batch's bucket ids and attention mask (``docs/glm.md`` §2–6), and a description that an
exported retriever records so it can rebuild the encoder. :class:`GraphT5Encoder` is the paper's
(Plenz & Frank's graph-T5); :class:`hoprag.glm.bert_encoder.GraphBertEncoder` turns a pretrained
BERT (the packaged MiniLM) into one.

Stock T5 computes its bias from sequence positions in layer 0 and shares it with every layer. We
compute it once per forward from the batch's bucket ids (:func:`hoprag.glm.levi.bucket_ids`),
fold the attention mask into it, and pass it to every block; all pretrained weights stay as they
are except layer 0's bias table, which gains the extra buckets (initialized from the pretrained
bucket of the largest positive distance, as the reference GLM does).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from hoprag.glm.levi import num_extra_buckets

FAR_POSITION = 10**6


class GraphEncoder(nn.Module):
    """The interface of a GLM graph encoder (subclasses set ``backbone``, buckets and variant)."""

    kind: ClassVar[str] = ""
    backbone: Any
    num_buckets: int
    max_distance: int
    global_graph: bool
    with_text: bool

    @property
    def d_model(self) -> int:
        """Width of the final token states."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What an exported retriever records to rebuild this encoder without downloads."""
        raise NotImplementedError

    def set_activation_checkpointing(self, on: bool) -> None:
        """HF's per-layer activation checkpointing of the backbone: each layer's activations are
        recomputed in the backward instead of kept (the layers are HF modules called one by one, so
        it applies here too). The name changed in transformers 5.2x; either works."""
        verb = "enable" if on else "disable"
        method = getattr(self.backbone, f"activation_checkpointing_{verb}", None)
        (method or getattr(self.backbone, f"gradient_checkpointing_{verb}"))()

    def forward(
        self,
        input_ids: torch.Tensor,
        buckets: torch.Tensor,
        mask: torch.Tensor,
        node_positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``(B, N, d_model)`` final token states."""
        raise NotImplementedError


def compute_dtype(hidden: torch.Tensor) -> torch.dtype:
    """The dtype attention scores are computed in: under autocast its dtype, else the states'.

    The ``(B, H, N, N)`` bias goes to scaled-dot-product attention as its additive mask, which its
    fused kernels read in the query's dtype (a float32 bias under bf16 autocast is twice the bytes
    and is converted in every layer)."""
    device_type = hidden.device.type
    if torch.is_autocast_enabled(device_type):
        return torch.get_autocast_dtype(device_type)
    return hidden.dtype


class GraphT5Encoder(GraphEncoder):
    """Wraps a HF ``T5EncoderModel``; ``forward(input_ids, buckets, mask)`` → final token states."""

    kind = "t5"

    def __init__(
        self, backbone: Any, global_graph: bool = True, with_text: bool = True, name: str = ""
    ) -> None:
        super().__init__()
        self.backbone = backbone
        self.name = name
        self.global_graph = global_graph
        self.with_text = with_text
        cfg = backbone.config
        self.num_buckets = cfg.relative_attention_num_buckets
        self.max_distance = cfg.relative_attention_max_distance
        attention = backbone.encoder.block[0].layer[0].SelfAttention
        old = attention.relative_attention_bias
        extra = num_extra_buckets(global_graph, with_text)
        if old.num_embeddings == self.num_buckets + extra:
            return  # already extended (e.g. loaded from a GLM checkpoint)
        new = nn.Embedding(self.num_buckets + extra, old.embedding_dim)
        with torch.no_grad():
            new.weight[: self.num_buckets] = old.weight[: self.num_buckets]
            far = attention._relative_position_bucket(
                torch.tensor(FAR_POSITION),
                bidirectional=True,
                num_buckets=self.num_buckets,
                max_distance=self.max_distance,
            )
            new.weight[self.num_buckets :] = old.weight[int(far)]
        new.to(old.weight.device, old.weight.dtype)
        attention.relative_attention_bias = new

    @property
    def d_model(self) -> int:
        return int(self.backbone.config.d_model)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "config": self.backbone.config.to_dict()}

    def attention_bias(self, buckets: torch.Tensor, mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """``(B, H, N, N)`` bias with the mask folded in (built once, shared by all layers).

        Contiguous in that layout: scaled-dot-product attention's fused kernels read the bias only
        when its last axis is contiguous; the table's ``(B, N, N, H)`` lookup merely permuted sends
        every layer to the unfused path (docs/bench-retrievers.md, "A GLM training step at t5-large size")."""
        table = self.backbone.encoder.block[0].layer[0].SelfAttention.relative_attention_bias
        bias = table(buckets).to(dtype).masked_fill(~mask.unsqueeze(-1), torch.finfo(dtype).min)
        return bias.permute(0, 3, 1, 2).contiguous()

    def forward(
        self,
        input_ids: torch.Tensor,
        buckets: torch.Tensor,
        mask: torch.Tensor,
        node_positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """T5 has no absolute positions: ``node_positions`` is accepted and ignored."""
        encoder = self.backbone.encoder
        hidden = encoder.dropout(encoder.embed_tokens(input_ids))
        bias = self.attention_bias(buckets, mask, compute_dtype(hidden))
        for block in encoder.block:
            hidden = block(hidden, None, bias)[0]
        return encoder.dropout(encoder.final_layer_norm(hidden))

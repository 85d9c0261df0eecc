"""llguidance's view of a Hugging Face tokenizer: every token's bytes, which tokens are special, and
how text is tokenized, for :mod:`hoprag.llm.grammar`.

``llguidance.hf.from_tokenizer`` serializes the tokenizer to JSON and has Rust parse it back into a
second copy of the whole tokenizer (merges included) to learn each token's bytes: for Gemma's 262k
tokens 5.7–6.8 s on a quiet 2-core machine and 18–26 s beside other work, paid again in every
process that decodes with a grammar (Ray Data actors, Serve replicas, test workers). The two vocabulary
families nearly every checkpoint uses spell their tokens' bytes plainly in the vocabulary:

- SentencePiece pieces with byte fallback (Gemma, Llama 2, Mistral): ``▁`` stands for a space and
  ``<0xNN>`` for one raw byte;
- GPT-2's byte-level alphabet (Llama 3, Qwen, GPT-2): each character stands for one byte.

For those the bytes are read here and llguidance gets a ``TokenizerWrapper`` (the route its own
``guidance`` front end takes): 1.0–1.3 s quiet, 3–4 s under the same load. Any other decoder
takes ``from_tokenizer``. tests/unit/test_grammar.py checks both families token by token against
``from_tokenizer``, and the integration tests do so for the packaged Gemma tokenizer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_SENTENCEPIECE_SPACE = "\u2581"
# decoders of the SentencePiece byte-fallback family that do not change a token's own bytes (Strip
# removes the sentence's first space at decode time, not a token's)
_BYTE_FALLBACK_STEPS = {"Replace", "ByteFallback", "Fuse", "Strip"}
# llguidance's "slices" precompute vocabulary subsets that speed up a full next-token mask (Gemma:
# ~0.6 ms -> ~0.02 ms for JSON strings) at ~4 s per build beside other work. Greedy decoding asks
# for the full mask only on steps where the model's best token breaks the grammar
# (GrammarLogitsProcessor), so the build costs more than the masks it would speed up.
_NO_SLICES: list[str] = []


def tokenizer_view(hf_tokenizer: Any, vocab_size: int) -> Any:
    """An ``llguidance.LLTokenizer`` for ``hf_tokenizer`` (a fast tokenizer) over ``vocab_size``
    logits, built from the vocabulary where its family is known (module docstring)."""
    import llguidance
    import llguidance.hf

    tokens = token_bytes(hf_tokenizer)
    if tokens is None:
        return llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=vocab_size, slices=_NO_SLICES)
    wrapper = llguidance.TokenizerWrapper(
        _VocabularyTokenizer(hf_tokenizer, tokens, sorted(special_token_ids(hf_tokenizer)))
    )
    return llguidance.LLTokenizer(
        wrapper, n_vocab=vocab_size, eos_token=hf_tokenizer.eos_token_id, slices=_NO_SLICES
    )


def token_bytes(hf_tokenizer: Any) -> list[bytes] | None:
    """Each token id's bytes, or ``None`` when the tokenizer's decoder is of neither known family."""
    family = _decoder_family(hf_tokenizer)
    if family is None:
        return None
    added = {i: token.content for i, token in hf_tokenizer.added_tokens_decoder.items()}
    pieces = hf_tokenizer.convert_ids_to_tokens(list(range(len(hf_tokenizer))))
    if family == "byte_level":
        try:  # GPT-2's byte <-> character table, as transformers converts tokenizers with it
            from transformers.convert_slow_tokenizer import bytes_to_unicode
        except ImportError:  # a transformers release that moved it: llguidance reads the bytes
            return None
        alphabet = {char: byte for byte, char in bytes_to_unicode().items()}
    out: list[bytes] = []
    for token_id, piece in enumerate(pieces):
        if token_id in added:  # added tokens are matched verbatim, never normalized
            out.append(added[token_id].encode())
        elif piece is None:  # a hole in the vocabulary
            out.append(b"")
        elif family == "byte_fallback":
            byte = _BYTE_PIECE.fullmatch(piece)
            out.append(
                bytes([int(byte.group(1), 16)]) if byte else piece.replace(_SENTENCEPIECE_SPACE, " ").encode()
            )
        else:
            try:
                out.append(bytes(alphabet[char] for char in piece))
            except KeyError:  # not the byte-level alphabet after all
                return None
    return out


def special_token_ids(hf_tokenizer: Any) -> set[int]:
    """The ids llguidance treats as special: added tokens marked special, and added tokens written
    like ``<tag>`` (as ``llguidance.hf.from_tokenizer`` does: HTML tags, image markers)."""
    return {
        token_id
        for token_id, token in hf_tokenizer.added_tokens_decoder.items()
        if token.special or (token.content.startswith("<") and token.content.endswith(">"))
    }


def _decoder_family(hf_tokenizer: Any) -> str | None:
    backend = getattr(hf_tokenizer, "backend_tokenizer", None)
    decoder = backend.decoder if backend is not None else None
    if decoder is None:
        return None
    spec = json.loads(decoder.__getstate__())
    steps = spec.get("decoders", [spec]) if spec.get("type") == "Sequence" else [spec]
    kinds = {step.get("type") for step in steps}
    if kinds == {"ByteLevel"}:
        return "byte_level"
    spaces = [
        step
        for step in steps
        if step.get("type") == "Replace"
        and step.get("pattern") == {"String": _SENTENCEPIECE_SPACE}
        and step.get("content") == " "
    ]
    if "ByteFallback" in kinds and spaces and kinds <= _BYTE_FALLBACK_STEPS:
        return "byte_fallback"
    return None


class _VocabularyTokenizer:
    """What ``llguidance.TokenizerWrapper`` reads: the token bytes, the special and end ids, and a
    call that tokenizes text as the model's tokenizer does."""

    def __init__(self, hf_tokenizer: Any, tokens: list[bytes], special: Sequence[int]) -> None:
        self._hf = hf_tokenizer
        self.tokens = tokens
        self.special_token_ids = list(special)
        self.eos_token_id = hf_tokenizer.eos_token_id
        self.bos_token_id = hf_tokenizer.bos_token_id

    def __call__(self, text: bytes | str) -> list[int]:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        return list(self._hf.encode(text, add_special_tokens=False))

"""Decoding constrained to a JSON schema or a line grammar for the embedded model, with ``llguidance``.

A prompt whose :class:`~hoprag.llm.base.GenerationParams` carry a ``json_schema`` (the JSON
extraction and entity prompts; a ``response_format`` sent to the OpenAI-protocol server) or a
``grammar`` (the triple lines of the OpenIE prompts) is decoded so that every token keeps the answer
a prefix of one the schema or grammar accepts: the answer parses, at worst cut off at
``max_new_tokens`` (which ``json-repair`` closes for JSON; a cut line is dropped). This is what vLLM's
structured outputs and OpenAI's ``response_format`` do on the other backends.

``llguidance`` (the grammar engine behind vLLM's and llama.cpp's structured output; one small wheel
with no dependencies) computes each row's allowed-token bitmask; the mask is applied here with plain
torch ops (its own helper compiles a kernel with ``torch.compile``, which CPU machines pay for in
seconds per shape).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_BITS = 32
# JSON written as the few-shot examples are (``json.dumps`` defaults: ", " and ": ", no other
# whitespace); keywords llguidance does not implement are ignored rather than refused.
_JSON_LIKE_DUMPS = {
    "item_separator": ", ",
    "key_separator": ": ",
    "whitespace_flexible": False,
    "lenient": True,
}


class DecodingGrammars:
    """One tokenizer's grammar engine: compiled grammars cached per schema (building the tokenizer
    view, :mod:`hoprag.llm.tokenizer_view`, costs seconds; compiling a schema a few milliseconds)."""

    def __init__(self, hf_tokenizer: Any, vocab_size: int, view: Any = None) -> None:
        """``view``: an ``llguidance.LLTokenizer`` built elsewhere (the llama.cpp backend reads one
        from the GGUF's vocabulary); without it, one is built from ``hf_tokenizer``."""
        if view is None:
            from hoprag.llm.tokenizer_view import tokenizer_view

            view = tokenizer_view(hf_tokenizer, vocab_size)
        self._tokenizer = view
        self.vocab_size = vocab_size
        self._grammars: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def grammar(self, json_schema: str | None = None, lark: str | None = None) -> str:
        """The llguidance grammar of a JSON schema or a Lark grammar, compiled once (a ``ValueError``
        names what cannot be decoded to)."""
        from llguidance import LLMatcher

        key = ("json", json_schema) if json_schema else ("lark", lark or "")
        with self._lock:
            found = self._grammars.get(key)
            if found is None:
                if json_schema:
                    found = LLMatcher.grammar_from_json_schema(
                        json_schema,
                        defaults=_JSON_LIKE_DUMPS,  # type: ignore[arg-type]
                    )
                else:
                    found = LLMatcher.grammar_from_lark(lark or "")
                error = LLMatcher.validate_grammar(found, self._tokenizer)
                if error:
                    raise ValueError(f"the {key[0]} grammar cannot be decoded to: {error}")
                self._grammars[key] = found
            return found

    def matcher(self, grammar: str) -> Any:
        """A fresh ``llguidance.LLMatcher`` of ``grammar`` (one per decoded row)."""
        from llguidance import LLMatcher

        return LLMatcher(self._tokenizer, grammar, log_level=0)

    def processor(
        self, grammar: str, batch_size: int, prompt_length: int, greedy: bool = True
    ) -> GrammarLogitsProcessor:
        """A logits processor for one ``generate`` call of ``batch_size`` rows (``grammar`` from
        :meth:`grammar`; ``greedy``: the call decodes greedily)."""
        return GrammarLogitsProcessor(
            self._tokenizer, grammar, batch_size, prompt_length, self.vocab_size, greedy
        )


class GrammarLogitsProcessor:
    """Masks, row by row, every token the grammar does not allow next (a ``transformers`` logits
    processor, last in the list). A row whose answer is complete may only end; a row whose matcher
    failed (it cannot, for tokens it allowed itself) is left unconstrained rather than stalled.

    Greedy decoding (``greedy``) first asks the matcher about the row's best token alone: when the
    grammar allows it, it is the pick with or without the mask, so the full mask (262k tokens for
    Gemma: milliseconds per row, more than the row's share of the forward pass) is computed only on
    the steps where the model's choice would break the grammar.
    """

    def __init__(
        self,
        tokenizer: Any,
        grammar: str,
        batch_size: int,
        prompt_length: int,
        vocab_size: int,
        greedy: bool = True,
    ) -> None:
        import torch
        from llguidance import LLMatcher

        self._matchers = [LLMatcher(tokenizer, grammar, log_level=0) for _ in range(batch_size)]
        self._eos = int(tokenizer.eos_token)
        self._prompt_length = prompt_length
        self._greedy = greedy
        self._row_mask = torch.zeros((vocab_size + _BITS - 1) // _BITS, dtype=torch.int32)
        self._shifts = torch.arange(_BITS, dtype=torch.int32)
        self.failed_rows = 0
        self.masked_steps = 0  # row-steps that needed the full mask
        self.steps = 0

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] > self._prompt_length:  # the token chosen last step, per row
            for matcher, token in zip(self._matchers, input_ids[:, -1].tolist(), strict=True):
                if not matcher.is_stopped() and not matcher.is_error() and not matcher.consume_token(token):
                    self.failed_rows += 1
        best = scores.argmax(dim=-1).tolist() if self._greedy else [None] * len(self._matchers)
        out = scores
        for row, (matcher, token) in enumerate(zip(self._matchers, best, strict=True)):
            if matcher.is_error():
                continue
            if matcher.is_stopped():  # the answer is complete: the row may only end
                if token != self._eos:
                    out = scores.clone() if out is scores else out
                    eos_score = out[row, self._eos].clone()
                    out[row] = float("-inf")
                    out[row, self._eos] = eos_score
                continue
            self.steps += 1
            if token is not None and matcher.validate_tokens([token]) == 1:
                continue
            if out is scores:
                out = scores.clone()
            self.masked_steps += 1
            out[row] = out[row].masked_fill(~self._allowed(matcher, scores.shape[-1]), float("-inf"))
        return out

    def _allowed(self, matcher: Any, width: int) -> torch.Tensor:
        """The matcher's next-token mask as booleans over ``width`` logits (logits past the
        tokenizer's vocabulary are not allowed)."""
        import torch

        mask = self._row_mask
        matcher.unsafe_compute_mask_ptr(mask.data_ptr(), mask.numel() * mask.element_size())
        allowed = ((mask.unsqueeze(-1) >> self._shifts) & 1).flatten().bool()[:width]
        if allowed.shape[0] < width:
            allowed = torch.nn.functional.pad(allowed, (0, width - allowed.shape[0]))
        return allowed

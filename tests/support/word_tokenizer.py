"""A whitespace tokenizer with predictable token counts, for hand-worked GLM examples."""

from __future__ import annotations


class WordTokenizer:
    """One token per whitespace-separated word; the question gets an EOS (id 1), like T5."""

    unk_token_id = 2

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}

    def _ids(self, text: str) -> list[int]:
        return [self.vocab.setdefault(w, 10 + len(self.vocab)) for w in text.split()]

    def __call__(self, text, add_special_tokens: bool = True):
        if isinstance(text, list):
            return {"input_ids": [self._ids(t) for t in text]}
        return {"input_ids": self._ids(text) + ([1] if add_special_tokens else [])}

"""The llama.cpp pieces the backend (:mod:`hoprag.llm.llamacpp`) builds on: one-time process setup
with llama.cpp's log routed to Python logging, the GGUF's chat template, llguidance's view of the
GGUF vocabulary, and the shared prompt head of a batch."""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Sequence
from typing import Any

_BACKEND_READY = threading.Lock()
_backend_initialized = False
_log_callback: Any = None
_TOKEN_ATTR_CONTROL = 1 << 3
_TOKEN_ATTR_USER_DEFINED = 1 << 4


def init_backend() -> None:
    """Initialize llama.cpp once per process, its log lines routed to the ``llama.cpp`` logger (each
    load prints ~40 lines to stderr otherwise; they show at DEBUG)."""
    global _backend_initialized, _log_callback
    with _BACKEND_READY:
        if not _backend_initialized:
            import llama_cpp

            native = logging.getLogger("llama.cpp")
            # ggml's levels: 1 debug, 2 info (chatter: every buffer of a load), 3 warn, 4 error,
            # 5 the previous line continued
            levels = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.WARNING, 4: logging.ERROR}
            last = [logging.DEBUG]

            @llama_cpp.llama_log_callback
            def route(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
                last[0] = levels.get(level, last[0])
                line = text.decode(errors="replace").rstrip()
                # warnings about choices made here on purpose: one KV buffer for all rows may be
                # larger than the training context (each row's positions stay within context_tokens),
                # several sequences need the full sliding-window cache, and a LoRA beside repacked
                # weights computes on the plain CPU buffer (a warning per layer)
                chosen = "n_ctx_train" in line or "full-size SWA cache" in line or "cannot use buft" in line
                native.log(logging.DEBUG if chosen else last[0], "%s", line)

            _log_callback = route  # kept alive: llama.cpp holds only the C pointer
            llama_cpp.llama_log_set(route, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            _backend_initialized = True


def chat_formatter(template: str, model: Any) -> Any:
    """The GGUF's chat template as a function of the messages (the generation prompt added)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def text_of(token: int) -> str:
        if token < 0:
            return ""
        return model.token_get_text(token) or ""

    formatter = Jinja2ChatFormatter(
        template=template, eos_token=text_of(model.token_eos()), bos_token=text_of(model.token_bos())
    )

    def render(messages: Sequence[Any]) -> str:
        return str(formatter(messages=[dict(m) for m in messages]).prompt)

    return render


def common_prefix(sequences: Sequence[Sequence[int]]) -> list[int]:
    """The longest token list every sequence starts with."""
    if not sequences:
        return []
    first = sequences[0]
    length = min(len(s) for s in sequences)
    for i in range(length):
        token = first[i]
        if any(s[i] != token for s in sequences[1:]):
            return list(first[:i])
    return list(first[:length])


def token_piece(vocab: Any, token: int, special: bool = False, buffer: Any = None) -> bytes:
    """The bytes of ``token`` (``special``: control tokens as their text, e.g. ``<|im_end|>``);
    ``buffer``, reused across calls, grows for a longer piece."""
    import llama_cpp

    buffer = buffer if buffer is not None else ctypes.create_string_buffer(64)
    n = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, special)
    if n < 0:  # the piece needs -n bytes
        buffer = ctypes.create_string_buffer(-n)
        n = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, special)
    return bytes(buffer.raw[: max(0, n)])


def vocabulary_view(model: Any, n_vocab: int) -> Any:
    """llguidance's view of the GGUF vocabulary: each token's bytes, the special tokens and how
    text tokenizes (the vocabulary as llama.cpp itself reads it)."""
    import llama_cpp
    import llguidance

    tokens: list[bytes] = []
    special: list[int] = []
    buffer = ctypes.create_string_buffer(256)
    for token in range(n_vocab):
        tokens.append(token_piece(model.vocab, token, special=True, buffer=buffer))
        attr = int(llama_cpp.llama_vocab_get_attr(model.vocab, token))
        if attr & _TOKEN_ATTR_CONTROL or (
            attr & _TOKEN_ATTR_USER_DEFINED and tokens[-1].startswith(b"<") and tokens[-1].endswith(b">")
        ):
            special.append(token)

    class Vocabulary:
        def __init__(self) -> None:
            self.tokens = tokens
            self.special_token_ids = special
            self.eos_token_id = int(model.token_eos())
            bos = int(model.token_bos())
            self.bos_token_id = bos if bos >= 0 else None

        def __call__(self, text: bytes | str) -> list[int]:
            data = text if isinstance(text, bytes) else text.encode("utf-8")
            return list(model.tokenize(data, add_bos=False, special=False))

    return llguidance.LLTokenizer(
        llguidance.TokenizerWrapper(Vocabulary()),
        n_vocab=n_vocab,
        eos_token=int(model.token_eos()),
        slices=[],
    )

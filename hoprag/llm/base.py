"""The contract every LLM backend implements.

A backend turns a batch of prompts into a batch of completions. Prompts come in two styles:
``completion`` (a plain string, for base models such as the embedded Gemma 3 270M) and ``chat``
(a list of role/content messages, for instruct models). Prompt builders ask the backend which
style it wants (:attr:`LLM.prompt_style`) and build that form.

Failures are per prompt, never per batch: a prompt whose generation failed (endpoint timed out,
retries exhausted, ...) comes back as a :class:`Completion` with ``error`` set, so one bad request
cannot lose the rest of the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict, runtime_checkable

PromptStyle = Literal["completion", "chat"]


class ChatMessage(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


Prompt = str | list[ChatMessage]


@dataclass(frozen=True)
class GenerationParams:
    """Sampling settings shared by all backends (greedy by default, for reproducible indexes)."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Completion:
    """One prompt's result. ``text`` is already cut at the first stop sequence (stop excluded)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: Literal["stop", "length", "error"] = "stop"
    error: str | None = None
    """Why generation failed (e.g. ``"timeout"``, ``"http_503"``); ``None`` on success."""
    metadata: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class LLM(Protocol):
    """A batched text generator."""

    @property
    def model_id(self) -> str:
        """Stable identifier of the weights; part of every extraction-cache key."""
        ...

    @property
    def prompt_style(self) -> PromptStyle:
        """Which prompt form this backend expects."""
        ...

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        """Complete every prompt; the result has one entry per prompt, in order."""
        ...


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the earliest stop sequence; return the text and whether a stop was hit."""
    cut = len(text)
    for s in stop:
        if s:
            i = text.find(s)
            if 0 <= i < cut:
                cut = i
    return text[:cut], cut < len(text)


def render_chat_as_completion(messages: Sequence[ChatMessage]) -> str:
    """Flatten chat messages into a plain prompt for base models that have no chat template."""
    parts = []
    for m in messages:
        if m["role"] == "system":
            parts.append(m["content"].strip())
        elif m["role"] == "user":
            parts.append(f"User: {m['content'].strip()}")
        else:
            parts.append(f"Assistant: {m['content'].strip()}")
    parts.append("Assistant:")
    return "\n\n".join(parts)

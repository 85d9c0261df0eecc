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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

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
    stop_on_repeated_line: bool = False
    """End a prompt's generation once it degenerates: a complete line repeated, or a line running
    past :data:`MAX_LINE_CHARS` or :data:`MAX_LINE_SEPARATORS` (small models loop on list outputs, e.g. ``(X | in 1922 | in 1922 | ...``;
    in a batch one looping row would otherwise hold every row until ``max_new_tokens``).
    Backends without such control may ignore it; list parsers drop or de-duplicate such lines."""
    json_schema: str | None = None
    """The JSON schema (serialized) an answer to a JSON prompt follows. A backend that can constrain
    decoding to it does (an OpenAI-compatible endpoint's ``response_format``); others ignore it and
    the parser reads (and repairs) what comes."""
    grammar: str | None = None
    """A Lark grammar (llguidance's dialect) an answer in a line format follows, e.g. the triple
    lines of the OpenIE prompts. The embedded model constrains decoding to it
    (:mod:`hoprag.llm.grammar`); other backends ignore it and the parser reads what comes."""
    task: str | None = None
    """The pipeline task the prompt belongs to (``openie``, ``ner``, ``answer``, ``plan``, ``update``,
    ``judge``, ...; set by the prompt builders). A backend serving a distilled student applies its
    adapter only to the tasks the student was trained on
    (:func:`hoprag.llm.adapters.adapter_for_task`); ``None``: the first adapter applies."""


MAX_LINE_CHARS = 200
MAX_LINE_SEPARATORS = 6  # a triple line has 2 "|"; split relations add a few; loops add many


def uses_student_prompt(llm: object, task: str) -> bool:
    """Whether ``llm`` is a distilled student trained on ``task`` (``openie``, ``ner``): it then gets
    the task's short student prompt (its adapter's ``student.json`` lists the tasks)."""
    return task in getattr(llm, "student_tasks", ())


TASK_OPENIE = "openie"
TASK_NER = "ner"
TASK_ANSWER = "answer"
TASK_PLAN = "plan"
TASK_UPDATE = "update"
"""The tasks a distilled student can be trained on (``student.json`` ``tasks``): the names their
prompts carry in :attr:`GenerationParams.task` and that :func:`uses_student_prompt` and
:func:`hoprag.llm.adapters.adapter_for_task` match, so one spelling serves indexing, distillation and the planner."""


def is_degenerate_list_output(text: str) -> bool:
    """Whether a line-per-item output has started looping (see ``stop_on_repeated_line``)."""
    lines = text.split("\n")
    complete = [line.strip() for line in lines[:-1] if line.strip()]
    last = lines[-1]
    return (
        len(complete) != len(set(complete))
        or len(last) > MAX_LINE_CHARS
        or last.count("|") > MAX_LINE_SEPARATORS
    )


@dataclass(frozen=True)
class PromptSpec:
    """A prompt plus the generation settings and parser format that belong to it."""

    prompt: Prompt
    params: GenerationParams
    output_format: str  # "lines" (few-shot completion) or "json" (chat)


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


@dataclass(frozen=True)
class BackendSpec:
    """One LLM backend, declared once in its own module and collected by :mod:`hoprag.llm.factory`.

    ``model_id`` is the single function from the backend's config section to its model id: the
    backend's ``model_id`` property returns it, and extraction-cache keys use it before any model
    is loaded, so the two can never disagree.
    """

    name: str  # the ``backend`` value that selects it (and its config section's name)
    config_type: type[Any]  # the pydantic model of its config section
    constructor: Callable[[Any], LLM]  # config section -> LLM; heavy engines import inside
    model_id: Callable[[Any], str]
    needs: str  # what its config section must give (for the error when the section is missing)
    task_model_id: Callable[[Any, str], str] | None = None
    """(config section, task) -> the id of the weights that task's prompts run on, for backends
    that route tasks to adapters; ``None``: every task runs on ``model_id``'s weights."""


def task_model_id(llm: object, task: str) -> str:
    """The id of the weights ``llm`` answers prompts of ``task`` with: its ``task_model_id(task)``
    where it routes tasks to adapters (a list of distilled students), else its ``model_id``. What
    caches of one task's outputs key on (extraction, question NER), so adding a student of another
    task does not invalidate them."""
    routed = getattr(llm, "task_model_id", None)
    return str(routed(task)) if callable(routed) else str(llm.model_id)  # type: ignore[attr-defined]


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

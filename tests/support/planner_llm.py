"""A scripted LLM for planner tests: prepared answers per prompt kind, malformed ones included.

It implements the :class:`hoprag.llm.base.LLM` protocol. Each prompt's kind is read from how its
last block ends (``Steps:`` → plan, ``Next:`` → update, ...); the response is the first scripted
rule whose kind matches and whose ``contains`` text occurs in that block. Every prompt and every
``generate`` batch size is recorded, so tests can assert batching and caching.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hoprag.llm.base import Completion, GenerationParams, Prompt, PromptStyle, truncate_at_stop

_KINDS = {
    "Steps:": "plan",
    "Sub-questions:": "decompose",
    "Next:": "update",
    "Enough:": "answerable",
    "Entities:": "entities",
}


def prompt_kind(prompt: str) -> tuple[str, str]:
    """(kind, last block) of a planner prompt in completion style."""
    block = prompt.rstrip().rsplit("\n\n", 1)[-1]
    tail = block.rstrip()
    for end, kind in _KINDS.items():
        if tail.endswith(end):
            return kind, block
    if tail.endswith("Rewritten:"):
        if "Matched:" in block:
            return "clue_query", block
        return ("enhance" if "Remaining:" in block else "rewrite"), block
    if tail.endswith("Answer:"):
        if "Facts:" in block:
            return "answer", block
        return ("summary" if "Findings:" in block else "final"), block
    return "other", block


@dataclass
class Rule:
    kind: str
    response: str
    contains: str = ""
    error: str | None = None  # return a failed completion instead (e.g. "timeout")


@dataclass
class ScriptedPlannerLLM:
    rules: list[Rule]
    default: str = "unknown"
    model_id: str = "scripted-planner"
    prompt_style: PromptStyle = "completion"
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (kind, block)
    batches: list[int] = field(default_factory=list)

    def kinds(self) -> list[str]:
        return [k for k, _ in self.prompts]

    def _respond(self, prompt: str) -> Completion:
        kind, block = prompt_kind(prompt)
        self.prompts.append((kind, block))
        for rule in self.rules:
            if rule.kind == kind and rule.contains in block:
                if rule.error:
                    return Completion(text="", finish_reason="error", error=rule.error)
                return Completion(
                    text=rule.response,
                    prompt_tokens=len(prompt.split()),
                    completion_tokens=len(rule.response.split()),
                )
        return Completion(text=self.default, prompt_tokens=len(prompt.split()), completion_tokens=1)

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        self.batches.append(len(prompts))
        out = []
        for p in prompts:
            assert isinstance(p, str), "the scripted planner LLM takes completion prompts"
            c = self._respond(p)
            text, _ = truncate_at_stop(c.text, params.stop)
            out.append(
                Completion(
                    text=text,
                    prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens,
                    finish_reason=c.finish_reason,
                    error=c.error,
                )
            )
        return out

"""PAI-2's binary LLM-as-a-judge: is the generated answer correct given the gold answer?

The judge sees the question, the gold answer (and aliases) and the generated answer and says yes
(1) or no (0); accuracy is the mean. Outputs that are neither yes nor no are not guessed: they are
``None`` and counted as ``judge_invalid`` in the summary. The prompt is versioned: changing it
must bump :data:`JUDGE_PROMPT_VERSION` (reports record it).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from hoprag.llm.base import LLM, ChatMessage, GenerationParams, PromptSpec, PromptStyle
from hoprag.llm.factory import LLMBackendConfig
from hoprag.planner.parsing import parse_yes_no

JUDGE_PROMPT_VERSION = "judge-v1"

_TASK = (
    "You grade answers to questions. Given the question, the correct answer and a generated answer, "
    "say yes if the generated answer means the same as the correct answer (wording may differ), otherwise no."
)
_SHOTS = [
    ("Who directed Payment On Demand?", "Curtis Bernhardt", "It was directed by Curtis Bernhardt.", "yes"),
    ("Who directed Payment On Demand?", "Curtis Bernhardt", "Carl Boese", "no"),
]


class JudgeConfig(BaseModel):
    """Which LLM judges (the paper: Qwen2.5 7B through any OpenAI-compatible endpoint)."""

    enabled: bool = Field(default=False, description="Add LLM-as-judge accuracy ('judge') to QA systems.")
    llm: LLMBackendConfig = Field(default_factory=LLMBackendConfig)


def judge_prompt(question: str, golds: Sequence[str], answer: str, style: PromptStyle) -> PromptSpec:
    def block(q: str, gold: str, a: str) -> str:
        return f"Question: {q}\nCorrect answer: {gold}\nGenerated answer: {a}\nCorrect:"

    gold = " / ".join(g for g in golds if g) or "(none)"
    instance = block(question, gold, answer or "(no answer)")
    if style == "completion":
        shots = "\n\n".join(f"{block(q, g, a)} {v}" for q, g, a, v in _SHOTS)
        return PromptSpec(f"{_TASK}\n\n{shots}\n\n{instance}", GenerationParams(4, 0.0, ("\n",)), "lines")
    messages: list[ChatMessage] = [
        {"role": "system", "content": _TASK + " Answer with one word: yes or no."},
        {"role": "user", "content": instance},
    ]
    return PromptSpec(messages, GenerationParams(4, 0.0, ()), "lines")


def judge(llm: LLM, items: Sequence[tuple[str, Sequence[str], str]]) -> list[float | None]:
    """1.0 / 0.0 per (question, gold answers, generated answer); ``None`` for an invalid verdict.

    An empty generated answer (NotEnoughInfo) is incorrect without asking the judge.
    """
    out: list[float | None] = [0.0 if not a.strip() else None for _, _, a in items]
    asked = [i for i, (_, _, a) in enumerate(items) if a.strip()]
    if not asked:
        return out
    specs = [judge_prompt(*items[i], llm.prompt_style) for i in asked]
    completions = llm.generate([s.prompt for s in specs], specs[0].params)
    for i, c in zip(asked, completions, strict=True):
        verdict = parse_yes_no(c.text) if c.ok else None
        out[i] = None if verdict is None or not verdict.ok else float(bool(verdict.value))
    return out

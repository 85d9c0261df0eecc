"""LLM-as-a-judge metrics of PAI-2 (section V-B), each with a versioned prompt.

- ``judge``: binary answer correctness given the gold answer (1 yes / 0 no); accuracy is the mean.
- ``context_relevance``: two independent judge calls rate the retrieved context's relevance to
  the question on 0/1/2; ratings are mapped to [0, 1] and averaged.
- ``faithfulness``: the answer is split into statements; each is checked against the retrieved
  context; the score is the supported fraction.

Outputs a judge cannot be read from (neither yes nor no, no 0/1/2 rating) are never guessed:
they yield ``None`` and the evaluation counts them per metric as invalid judgements. Changing a
prompt must bump its version constant (reports record them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import Field

from hoprag.config import StrictModel
from hoprag.llm.base import LLM, ChatMessage, GenerationParams, PromptSpec, PromptStyle
from hoprag.llm.factory import LLMBackendConfig
from hoprag.planner.parsing import parse_yes_no

# v2: chat-style prompts carry the few-shot examples as user/assistant turns (completion-style
# prompts are unchanged from v1).
JUDGE_PROMPT_VERSION = "judge-v2"
CONTEXT_RELEVANCE_PROMPT_VERSION = "context-relevance-v2"
FAITHFULNESS_PROMPT_VERSION = "faithfulness-v2"
MAX_STATEMENTS = 8

_TASK = (
    "You grade answers to questions. Given the question, the correct answer and a generated answer, "
    "say yes if the generated answer means the same as the correct answer (wording may differ), otherwise no."
)
_SHOTS = [
    ("Who directed Payment On Demand?", "Curtis Bernhardt", "It was directed by Curtis Bernhardt.", "yes"),
    ("Who directed Payment On Demand?", "Curtis Bernhardt", "Carl Boese", "no"),
]

# Two wordings, asked independently, as PAI-2's context relevance (one judge's bias averages out).
_RELEVANCE_TASKS = (
    "Rate how relevant the context is to the question: 0 = not relevant, 1 = partly relevant, "
    "2 = fully relevant (it holds what is needed to answer). Reply with the digit only.",
    "Does the context hold the information needed to answer the question? Reply 2 if fully, "
    "1 if partly, 0 if not, with the digit only.",
)
_RELEVANCE_SHOTS = [
    ("Who directed Payment On Demand?", "Payment On Demand | directed by | Curtis Bernhardt", "2"),
    ("Who directed Payment On Demand?", "Bette Davis | born in | Lowell", "0"),
]
_STATEMENTS_TASK = (
    "Break the answer to the question into short standalone statements, one per line, "
    "each understandable without the question."
)
_STATEMENT_SHOTS = [
    (
        "Where was the director of Payment On Demand born?",
        "Curtis Bernhardt, born in Worms",
        "Curtis Bernhardt directed Payment On Demand.\nCurtis Bernhardt was born in Worms.",
    ),
]
_SUPPORT_TASK = "Say yes if the statement can be inferred from the context alone, otherwise no."
_SUPPORT_SHOTS = [
    (
        "Payment On Demand | directed by | Curtis Bernhardt",
        "Curtis Bernhardt directed Payment On Demand.",
        "yes",
    ),
    ("Payment On Demand | directed by | Curtis Bernhardt", "Curtis Bernhardt was born in Worms.", "no"),
]


_CHAT_FORMAT = {
    False: " Reply with the verdict only, exactly as in the examples.",
    True: " Output only the statements, one per line, nothing else.",
}


class JudgeConfig(StrictModel):
    """Which LLM judges and what (the paper: Qwen2.5 7B through any OpenAI-compatible endpoint)."""

    enabled: bool = Field(default=False, description="Add LLM-as-judge accuracy ('judge') to QA systems.")
    context_relevance: bool = Field(
        default=False,
        description="Add 'context_relevance' (two 0/1/2 ratings) to QA systems that retrieve context.",
    )
    faithfulness: bool = Field(
        default=False,
        description="Add 'faithfulness' (supported fraction of the answer's statements) to QA systems that "
        "retrieve context; a NotEnoughInfo answer makes no claims and gets no score.",
    )
    max_context_chars: int = Field(
        default=4000, ge=200, description="The retrieved context shown to the judge is cut to this length."
    )
    llm: LLMBackendConfig = Field(default_factory=LLMBackendConfig)

    @property
    def any(self) -> bool:
        return self.enabled or self.context_relevance or self.faithfulness

    def prompt_versions(self) -> dict[str, str]:
        """The prompt version of every enabled judge metric (reports record them)."""
        versions = {
            "judge": (self.enabled, JUDGE_PROMPT_VERSION),
            "context_relevance": (self.context_relevance, CONTEXT_RELEVANCE_PROMPT_VERSION),
            "faithfulness": (self.faithfulness, FAITHFULNESS_PROMPT_VERSION),
        }
        return {name: version for name, (on, version) in versions.items() if on}


def _spec(
    task: str,
    shots: Sequence[tuple[str, str]],
    instance: str,
    style: PromptStyle,
    max_tokens: int = 4,
    multiline: bool = False,
) -> PromptSpec:
    """A judge prompt in either style: few-shot completion (``instance`` ends with its label) or chat
    (the same examples as user/assistant turns, so an instruct model sees the expected output form)."""
    if style == "completion":
        examples = "\n\n".join(
            f"{block} {out}" if not multiline else f"{block}\n{out}" for block, out in shots
        )
        stop = ("\n\n",) if multiline else ("\n",)
        return PromptSpec(
            f"{task}\n\n{examples}\n\n{instance}",
            GenerationParams(max_tokens, 0.0, stop, task="judge"),
            "lines",
        )
    messages: list[ChatMessage] = [{"role": "system", "content": task + _CHAT_FORMAT[multiline]}]
    for block, out in shots:
        messages += [{"role": "user", "content": block}, {"role": "assistant", "content": out}]
    messages.append({"role": "user", "content": instance})
    return PromptSpec(messages, GenerationParams(max_tokens, 0.0, (), task="judge"), "lines")


def judge_prompt(question: str, golds: Sequence[str], answer: str, style: PromptStyle) -> PromptSpec:
    def block(q: str, gold: str, a: str) -> str:
        return f"Question: {q}\nCorrect answer: {gold}\nGenerated answer: {a}\nCorrect:"

    gold = " / ".join(g for g in golds if g) or "(none)"
    shots = [(block(q, g, a), v) for q, g, a, v in _SHOTS]
    return _spec(_TASK, shots, block(question, gold, answer or "(no answer)"), style)


def _one_paragraph(text: str) -> str:
    """Blank lines would end a few-shot block early; the context keeps its lines, loses blank ones."""
    return "\n".join(line for line in text.splitlines() if line.strip()) or "(empty)"


def context_relevance_prompts(question: str, context: str, style: PromptStyle) -> list[PromptSpec]:
    def block(q: str, c: str) -> str:
        return f"Question: {q}\nContext:\n{_one_paragraph(c)}\nRating:"

    shots = [(block(q, c), r) for q, c, r in _RELEVANCE_SHOTS]
    return [_spec(task, shots, block(question, context), style) for task in _RELEVANCE_TASKS]


def statements_prompt(question: str, answer: str, style: PromptStyle) -> PromptSpec:
    def block(q: str, a: str) -> str:
        return f"Question: {q}\nAnswer: {a}\nStatements:"

    shots = [(block(q, a), s) for q, a, s in _STATEMENT_SHOTS]
    return _spec(_STATEMENTS_TASK, shots, block(question, answer), style, max_tokens=96, multiline=True)


def support_prompt(context: str, statement: str, style: PromptStyle) -> PromptSpec:
    def block(c: str, s: str) -> str:
        return f"Context:\n{_one_paragraph(c)}\nStatement: {s}\nSupported:"

    shots = [(block(c, s), v) for c, s, v in _SUPPORT_SHOTS]
    return _spec(_SUPPORT_TASK, shots, block(context, statement), style)


def parse_rating(text: str) -> int | None:
    """The 0/1/2 rating a judge gave, or ``None`` when its first token is not one of them."""
    match = re.match(r"\s*\**\s*([0-9]+)\b", text)
    if match is None or match.group(1) not in {"0", "1", "2"}:
        return None
    return int(match.group(1))


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def parse_statements(text: str) -> list[str]:
    """Statements, one per line (bullets and numbering removed), at most :data:`MAX_STATEMENTS`.
    A line ending in ':' is a preamble ("Here are the statements:"), not a claim."""
    lines = (_BULLET.sub("", line).strip() for line in text.splitlines())
    return [line for line in lines if len(line) > 2 and not line.endswith(":")][:MAX_STATEMENTS]


def judge(llm: LLM, items: Sequence[tuple[str, Sequence[str], str]]) -> list[float | None]:
    """1.0 / 0.0 per (question, gold answers, generated answer); ``None`` for an invalid verdict.

    An empty generated answer (NotEnoughInfo) is incorrect without asking the judge.
    """
    out: list[float | None] = [0.0 if not a.strip() else None for _, _, a in items]
    asked = [i for i, (_, _, a) in enumerate(items) if a.strip()]
    if not asked:
        return out
    specs = [judge_prompt(*items[i], llm.prompt_style) for i in asked]
    for i, verdict in zip(asked, _yes_no(llm, specs), strict=True):
        out[i] = verdict
    return out


def context_relevance(llm: LLM, question: str, context: str) -> float | None:
    """Mean of the two ratings mapped to [0, 1]; one unreadable rating leaves the other; both: ``None``."""
    specs = context_relevance_prompts(question, context, llm.prompt_style)
    ratings = []
    # Two independent prompts (neither sees the other's rating), sent as one batch.
    for completion in llm.generate([s.prompt for s in specs], specs[0].params):
        rating = parse_rating(completion.text) if completion.ok else None
        if rating is not None:
            ratings.append(rating / 2)
    return sum(ratings) / len(ratings) if ratings else None


def faithfulness(llm: LLM, question: str, answer: str, context: str) -> float | None:
    """Supported fraction of the answer's statements; ``None`` when no verdict could be read.

    An answer the statement splitter returns nothing for is checked as one statement.
    """
    spec = statements_prompt(question, answer, llm.prompt_style)
    completion = llm.generate([spec.prompt], spec.params)[0]
    statements = parse_statements(completion.text) if completion.ok else []
    statements = statements or [f"The answer to '{question}' is {answer}."]
    verdicts = [
        v
        for v in _yes_no(llm, [support_prompt(context, s, llm.prompt_style) for s in statements])
        if v is not None
    ]
    return sum(verdicts) / len(verdicts) if verdicts else None


def _yes_no(llm: LLM, specs: Sequence[PromptSpec]) -> list[float | None]:
    """One batched call; 1.0 / 0.0 per prompt, ``None`` where the output is neither yes nor no."""
    completions = llm.generate([s.prompt for s in specs], specs[0].params)
    out: list[float | None] = []
    for c in completions:
        verdict = parse_yes_no(c.text) if c.ok else None
        out.append(None if verdict is None or not verdict.ok else float(bool(verdict.value)))
    return out

"""Versioned PAI-2 planner prompts, in both styles, each paired with the parser of its output.

``completion`` prompts are few-shot transcripts for base models (the embedded Gemma 3 270M);
``chat`` prompts state the same task and output format as instructions for instruct models.
Both styles ask for the same plain-line output, so one parser per task serves both.
The examples follow the PAI-2 paper's plan-enhancement case ("Payment On Demand" / "My Cousin
From Warsaw"). Changing any prompt text must bump :data:`PLANNER_PROMPT_VERSION` (LLM results
are cached by prompt, and traces record the version).

Tasks (``ours`` = the batched, merged design; ``paper`` = one call per PAI-2 sub-task):

========================  =====  =====  ==================================================
task                      ours   paper  output
========================  =====  =====  ==================================================
plan                      yes    yes    numbered steps
clue_query                rare   yes    one rewritten question
step_answer               yes    --     short answer or ``unknown`` (all clue queries' facts)
clue_answer               --     yes    short answer or ``unknown`` (one clue query's facts)
step_summary              --     yes    short answer or ``unknown`` (from the clue answers)
update                    yes    --     ``Final answer: ...`` or the rewritten remaining steps
enhance                   --     yes    the rewritten remaining steps
answerable                --     yes    yes / no
final_answer              yes    yes    short answer or ``unknown``
========================  =====  =====  ==================================================

Entity extraction reuses the indexing NER prompt (:func:`hoprag.extraction.prompts.ner_prompt`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hoprag.llm.base import (
    TASK_ANSWER,
    TASK_PLAN,
    TASK_UPDATE,
    ChatMessage,
    GenerationParams,
    Prompt,
    PromptSpec,
    PromptStyle,
)
from hoprag.planner.answer_type import AUXILIARY_VERBS, QUESTION_WORDS

PLANNER_PROMPT_VERSION = "pai2-v3"  # v2: the student plan and update prompts; v3: a bridge plan example

UNKNOWN = "unknown"

PLACEHOLDER = re.compile(r"\[[^\]]+\]")
"""A plan step's reference to an earlier step's answer ("Where was [the director of X] born?")."""

_PLAN_TASK = (
    "Split each question into search steps, one per line. A step that needs an earlier step's "
    "answer names it in [brackets]. A question that cannot be split is one step."
)
_PLAN_SHOTS = [
    (
        "Do both films Payment On Demand and My Cousin From Warsaw have directors from the same country?",
        [
            "Who is the director of Payment On Demand?",
            "Who is the director of My Cousin From Warsaw?",
            "What country is [director of Payment On Demand] from?",
            "What country is [director of My Cousin From Warsaw] from?",
        ],
    ),
    ("When was Carl Boese born?", ["When was Carl Boese born?"]),
    (
        "Who is the spouse of the director of Payment On Demand?",
        [
            "Who is the director of Payment On Demand?",
            "Who is the spouse of [director of Payment On Demand]?",
        ],
    ),
]

_ANSWER_TASK = (
    "Answer each question from the facts with a short phrase, or with unknown when the facts do not say."
)
_ANSWER_SHOTS = [
    (
        ["Payment On Demand | directed by | Curtis Bernhardt", "Curtis Bernhardt | born in | Worms"],
        "Who is the director of Payment On Demand?",
        "Curtis Bernhardt",
    ),
    (["Carl Boese | born in | Berlin"], "Who is the spouse of Carl Boese?", UNKNOWN),
]

_UPDATE_TASK = (
    "After each search step, give the final answer if the findings answer the question; otherwise "
    "rewrite the remaining steps, replacing [placeholders] with the names found."
)
_UPDATE_SHOTS = [
    (
        "Do both films Payment On Demand and My Cousin From Warsaw have directors from the same country?",
        [
            ("Who is the director of Payment On Demand?", "Curtis Bernhardt"),
            ("Who is the director of My Cousin From Warsaw?", "Carl Boese"),
        ],
        [
            "What country is [director of Payment On Demand] from?",
            "What country is [director of My Cousin From Warsaw] from?",
        ],
        "3. What country is Curtis Bernhardt from?\n4. What country is Carl Boese from?",
    ),
    (
        "Who is the spouse of the director of Payment On Demand?",
        [
            ("Who is the director of Payment On Demand?", "Curtis Bernhardt"),
            ("Who is the spouse of Curtis Bernhardt?", "Pearl Argyle"),
        ],
        [],
        "Final answer: Pearl Argyle",
    ),
]

_FINAL_TASK = (
    "Answer the question from the search results with a short phrase, or with unknown if they are not enough."
)
_FINAL_SHOTS = [
    (
        "Who is the spouse of the director of Payment On Demand?",
        [
            ("Who is the director of Payment On Demand?", "Curtis Bernhardt"),
            ("Who is the spouse of Curtis Bernhardt?", "Pearl Argyle"),
        ],
        "Pearl Argyle",
    ),
]

_CLUE_TASK = "Rewrite each question so that it uses the matched names exactly as given."
_CLUE_SHOTS = [
    (
        "Who directed the movie payment on demand?",
        [("payment on demand", "Payment On Demand")],
        "Who directed Payment On Demand?",
    ),
]

_ANSWERABLE_TASK = "Say yes if the search results are enough to answer the question, otherwise no."
_ENHANCE_TASK = "Rewrite the remaining search steps, replacing [placeholders] with the names found."
_SUMMARY_TASK = (
    "Combine the findings into a short answer to the question, or unknown if they do not answer it."
)


def numbered(lines: Sequence[str], start: int = 1) -> str:
    """Steps as the plan and update prompts write them: ``1. ...`` lines."""
    return "\n".join(f"{i}. {line}" for i, line in enumerate(lines, start=start))


def _findings(found: Sequence[tuple[str, str]]) -> str:
    return numbered([f"{q} -> {a}" for q, a in found]) if found else "(none)"


def _spec(
    style: PromptStyle,
    task: str,
    shots: Sequence[str],
    instance: str,
    max_new_tokens: int,
    stop: tuple[str, ...],
    name: str,
) -> PromptSpec:
    """A completion transcript (task, shots, instance) or a chat exchange with the same content;
    ``name`` is the task's name in :attr:`GenerationParams.task`. A distilled student's prompt is the
    completion transcript without shots."""
    if style == "completion":
        prompt = task + "\n\n" + "\n\n".join([*shots, instance])
        params = GenerationParams(max_new_tokens, 0.0, stop, stop_on_repeated_line=True, task=name)
        return PromptSpec(prompt, params, "lines")
    messages: list[ChatMessage] = [
        {
            "role": "system",
            "content": task + " Follow the format of the example exactly; write nothing else.",
        },
        {"role": "user", "content": f"Example:\n{shots[0]}\n\n{_INSTANCE_MARKER}\n{instance}"},
    ]
    return PromptSpec(messages, GenerationParams(max_new_tokens, 0.0, (), task=name), "lines")


def plan_prompt(
    question: str, style: PromptStyle, max_new_tokens: int = 96, student: bool = False
) -> PromptSpec:
    """Numbered search steps for ``question``. ``student``: the short prompt of a distilled student
    (the task and the question, no examples; same output)."""
    instance = f"Question: {question}\nSteps:\n"
    stop = ("\n\n", "Question:")
    if student:
        return _spec("completion", _PLAN_TASK, [], instance, max_new_tokens, stop, TASK_PLAN)
    shots = [f"Question: {q}\nSteps:\n{numbered(steps)}" for q, steps in _PLAN_SHOTS]
    return _spec(style, _PLAN_TASK, shots, instance, max_new_tokens, stop, TASK_PLAN)


def _facts_block(facts: Sequence[str], documents: Sequence[str] = ()) -> str:
    lines = [f"- {f}" for f in facts] or ["- (none)"]
    docs = "".join(f"Document: {d}\n" for d in documents)
    return f"{docs}Facts:\n" + "\n".join(lines)


def answer_prompt(
    question: str,
    facts: Sequence[str],
    style: PromptStyle,
    documents: Sequence[str] = (),
    max_new_tokens: int = 24,
    student: bool = False,
) -> PromptSpec:
    """One question answered from facts (and document texts): retrieve-mode answers, step answers and
    clue answers. ``student``: the short prompt of a distilled student (no examples; same output)."""
    if student:
        prompt = f"{_ANSWER_TASK}\n\n{_facts_block(facts, documents)}\nQuestion: {question}\nAnswer:"
        return PromptSpec(prompt, GenerationParams(max_new_tokens, 0.0, ("\n",), task=TASK_ANSWER), "lines")
    shots = [f"{_facts_block(f)}\nQuestion: {q}\nAnswer: {a}" for f, q, a in _ANSWER_SHOTS]
    instance = f"{_facts_block(facts, documents)}\nQuestion: {question}\nAnswer:"
    return _spec(style, _ANSWER_TASK, shots, instance, max_new_tokens, ("\n",), TASK_ANSWER)


def update_prompt(
    question: str,
    found: Sequence[tuple[str, str]],
    remaining: Sequence[str],
    style: PromptStyle,
    max_new_tokens: int = 96,
    student: bool = False,
) -> PromptSpec:
    """Final answer or rewritten remaining steps, in one call (answerability + enhancement merged).
    ``student``: the short prompt of a distilled student (no examples; same output)."""

    def block(q: str, f: Sequence[tuple[str, str]], rest: Sequence[str]) -> str:
        return (
            f"Question: {q}\nFound:\n{_findings(f)}\n"
            f"Remaining:\n{numbered(rest, len(f) + 1) if rest else '(none)'}\nNext:"
        )

    instance = block(question, found, remaining) + "\n"
    stop = ("\n\n", "Question:")
    if student:
        return _spec("completion", _UPDATE_TASK, [], instance, max_new_tokens, stop, TASK_UPDATE)
    shots = [f"{block(q, f, r)}\n{out}" for q, f, r, out in _UPDATE_SHOTS]
    return _spec(style, _UPDATE_TASK, shots, instance, max_new_tokens, stop, TASK_UPDATE)


def enhance_prompt(
    question: str,
    found: Sequence[tuple[str, str]],
    remaining: Sequence[str],
    style: PromptStyle,
    max_new_tokens: int = 96,
) -> PromptSpec:
    """The paper's plan enhancement alone: the remaining steps, rewritten."""
    q, f, r, out = _UPDATE_SHOTS[0]
    shot = f"Question: {q}\nFound:\n{_findings(f)}\nRemaining:\n{numbered(r, len(f) + 1)}\nRewritten:\n{out}"
    instance = (
        f"Question: {question}\nFound:\n{_findings(found)}\n"
        f"Remaining:\n{numbered(remaining, len(found) + 1)}\nRewritten:\n"
    )
    return _spec(style, _ENHANCE_TASK, [shot], instance, max_new_tokens, ("\n\n", "Question:"), "enhance")


def answerable_prompt(question: str, found: Sequence[tuple[str, str]], style: PromptStyle) -> PromptSpec:
    q, f, _ = _FINAL_SHOTS[0]
    shots = [
        f"Question: {q}\nSearch results:\n{_findings(f)}\nEnough: yes",
        f"Question: {q}\nSearch results:\n{_findings(f[:1])}\nEnough: no",
    ]
    instance = f"Question: {question}\nSearch results:\n{_findings(found)}\nEnough:"
    return _spec(style, _ANSWERABLE_TASK, shots, instance, 4, ("\n",), "answerable")


def final_answer_prompt(
    question: str, found: Sequence[tuple[str, str]], style: PromptStyle, max_new_tokens: int = 24
) -> PromptSpec:
    shots = [f"Question: {q}\nSearch results:\n{_findings(f)}\nAnswer: {a}" for q, f, a in _FINAL_SHOTS]
    instance = f"Question: {question}\nSearch results:\n{_findings(found)}\nAnswer:"
    return _spec(style, _FINAL_TASK, shots, instance, max_new_tokens, ("\n",), "final_answer")


def summary_prompt(
    question: str, clue_answers: Sequence[tuple[str, str]], style: PromptStyle, max_new_tokens: int = 24
) -> PromptSpec:
    """The paper's step summary: one answer from the clue queries' answers."""
    shot = (
        "Question: Who is the director of Payment On Demand?\nFindings:\n"
        "- Who directed Payment On Demand? -> Curtis Bernhardt\n- Who produced Payment On Demand? -> unknown\n"
        "Answer: Curtis Bernhardt"
    )
    lines = "\n".join(f"- {q} -> {a}" for q, a in clue_answers) or "- (none)"
    return _spec(
        style,
        _SUMMARY_TASK,
        [shot],
        f"Question: {question}\nFindings:\n{lines}\nAnswer:",
        max_new_tokens,
        ("\n",),
        "step_summary",
    )


def clue_query_prompt(
    step: str, matches: Sequence[tuple[str, str]], style: PromptStyle, max_new_tokens: int = 48
) -> PromptSpec:
    """Rewrite a step so it names the matched KG vertices (mention, vertex name) pairs."""

    def block(q: str, m: Sequence[tuple[str, str]]) -> str:
        return f"Question: {q}\nMatched: " + "; ".join(f"{a} = {b}" for a, b in m) + "\nRewritten:"

    shots = [f"{block(q, m)} {out}" for q, m, out in _CLUE_SHOTS]
    return _spec(style, _CLUE_TASK, shots, block(step, matches), max_new_tokens, ("\n",), "clue_query")


_REWRITE_TASKS = {
    "denoise": (
        "Rewrite each question without details that do not matter for answering it.",
        "So, my friend asked me yesterday, and I could not remember: who directed Payment On Demand?",
        "Who directed Payment On Demand?",
    ),
    "enhance": (
        "Rewrite each question so that it is explicit and self-contained.",
        "Payment On Demand director spouse?",
        "Who is the spouse of the director of the film Payment On Demand?",
    ),
}


def rewrite_question_prompt(
    question: str, mode: str, style: PromptStyle, max_new_tokens: int = 64
) -> PromptSpec:
    """Question preprocessing: ``denoise`` or ``enhance`` (paper: both off by default)."""
    task, before, after = _REWRITE_TASKS[mode]
    shot = f"Question: {before}\nRewritten: {after}"
    return _spec(
        style, task, [shot], f"Question: {question}\nRewritten:", max_new_tokens, ("\n",), f"{mode}_question"
    )


def decompose_prompt(question: str, style: PromptStyle, max_new_tokens: int = 96) -> PromptSpec:
    """Question preprocessing: independent sub-questions, each searched on its own."""
    task = "Split each question into independent sub-questions, one per line; a simple question stays whole."
    shot = (
        "Question: Who is older, Carl Boese or Curtis Bernhardt?\nSub-questions:\n"
        "1. When was Carl Boese born?\n2. When was Curtis Bernhardt born?"
    )
    return _spec(
        style,
        task,
        [shot],
        f"Question: {question}\nSub-questions:\n",
        max_new_tokens,
        ("\n\n", "Question:"),
        "decompose",
    )


_INSTANCE_MARKER = "Now complete this one:"


def _examples_and_instance(prompt: Prompt) -> tuple[str, str]:
    """A few-shot prompt's worked examples and its instance, lowercased."""
    flat = prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)
    if _INSTANCE_MARKER in flat:
        examples, instance = flat.rsplit(_INSTANCE_MARKER, 1)
    else:
        examples, _, instance = flat.rpartition("\n\n")
    return examples.lower(), instance.lower()


def _names(text: str) -> set[str]:
    """The capitalized words of ``text`` that may name something, lowercased."""
    return {w.lower() for w in _NAME_WORD.findall(text)} - _QUESTION_WORDS


def _has_words(text: str, words: str) -> bool:
    """Whether lowercased ``text`` contains ``words`` as whole words."""
    return re.search(rf"(?<!\w){re.escape(words)}(?!\w)", text) is not None


def copied_from_examples(prompt: Prompt, text: str) -> bool:
    """Whether ``text`` was copied from the prompt's worked examples rather than written about the
    instance: it occurs (as whole words) in the examples, not in the instance, and names nothing
    the instance names.

    Small base models sometimes answer with an example's answer ("Pearl Argyle") or plan an
    example's steps; such output is not about the question and is treated as unusable.
    """
    examples, instance = _examples_and_instance(prompt)
    needle = text.lower().strip()
    if not needle or needle in instance or not _has_words(examples, needle):
        return False
    return not any(_has_words(instance, n) for n in _names(text))


def names_example_only(prompt: Prompt, text: str) -> bool:
    """Whether ``text`` (a plan step) names something only the prompt's worked examples name: a
    capitalized word of it occurs in the examples and not in the instance ("Who is the wife of the
    director of Payment On Demand?" planned for a question about a football club)."""
    examples, instance = _examples_and_instance(prompt)
    return any(_has_words(examples, w) and not _has_words(instance, w) for w in _names(text))


_NAME_WORD = re.compile(r"\b[A-Z0-9][\w'-]*")
# capitalized words of a question that name nothing
_QUESTION_WORDS = QUESTION_WORDS | AUXILIARY_VERBS | {"the", "a", "an", "in", "of"}

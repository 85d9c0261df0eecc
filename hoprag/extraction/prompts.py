"""Versioned OpenIE / NER prompts in the two styles backends accept.

``completion`` prompts are few-shot transcripts for base models (the embedded Gemma 3 270M): the
model continues the pattern and a stop sequence ends its answer. ``chat`` prompts ask instruct
models for JSON. Changing any prompt text must bump :data:`PROMPT_VERSION`: it is part of the
extraction cache key, so old cached results are not mixed with new ones.
"""

from __future__ import annotations

import json

from hoprag.llm.base import TASK_NER, TASK_OPENIE, ChatMessage, GenerationParams, PromptSpec, PromptStyle

PROMPT_VERSION = "openie-v2"

__all__ = [
    "PROMPT_VERSION",
    "STUDENT_PROMPT_VERSION",
    "PromptSpec",
    "last_block",
    "ner_prompt",
    "openie_prompt",
]

# The short prompts a distilled student was trained on (instruction + input, no few-shot block):
# OpenIE and NER here, the answer prompt in hoprag.planner.prompts. Part of student.json; changing
# any of their texts must bump it (and retrain the student).
STUDENT_PROMPT_VERSION = "student-v2"

# Invented names on purpose: a small model copies unfamiliar names faithfully, but drifts to
# famous ones ("Paris") when the examples contain real entities.
_FEW_SHOT = [
    (
        "Juno Halleck is a writer. Juno Halleck studied at Carrow College. "
        "Carrow College is located in Quifen.",
        [
            ("Juno Halleck", "is a", "writer"),
            ("Juno Halleck", "studied at", "Carrow College"),
            ("Carrow College", "located in", "Quifen"),
        ],
    ),
    (
        "The Salt Ledger is a film released in 1987. The Salt Ledger was directed by Oriel Fane. "
        "Velbrin Pharma manufactures Ostarizumab.",
        [
            ("The Salt Ledger", "is a", "film"),
            ("The Salt Ledger", "released in", "1987"),
            ("The Salt Ledger", "directed by", "Oriel Fane"),
            ("Velbrin Pharma", "manufactures", "Ostarizumab"),
        ],
    ),
]

_NER_FEW_SHOT = [
    ("In which town was the husband of the author of The Salt Ledger born?", ["The Salt Ledger"]),
    ("Did Juno Halleck and Oriel Fane study at the same college?", ["Juno Halleck", "Oriel Fane"]),
]


_OPENIE_INSTRUCTION = (
    "Extract the facts of the passage as (subject | relation | object) triples, one per line."
)
_NER_INSTRUCTION = "List the named entities the question mentions, separated by ';'."


# The chat (instruct-model) OpenIE prompt: every stated fact, dates and numbers included, as
# [subject, relation, object] rows and nothing else (no entity list first: an answer cut off at its
# token budget keeps the rows it wrote). Two invented passages of the two kinds Wikipedia prose
# mixes, a life and an organisation with its place; the relations stay the passages' own words.
_OPENIE_CHAT_INSTRUCTION = (
    "You extract knowledge-graph triples from a passage. Answer with JSON only: "
    '{"triples": [[subject, relation, object], ...]}. Write one triple for every fact the passage '
    "states, dates and numbers included. Subject and object are names or values as the passage "
    "writes them (resolve pronouns to the names they stand for); the relation is a short phrase "
    "in the passage's words."
)
_CHAT_EXAMPLES = [
    (
        "Oriel Fane (3 May 1921 - 14 June 1990) was a Velmarian film director. He was married to the "
        "actress Juno Halleck; their son Tobin Fane was born in Quifen. Fane directed The Salt Ledger (1987).",
        [
            ("Oriel Fane", "born on", "3 May 1921"),
            ("Oriel Fane", "died on", "14 June 1990"),
            ("Oriel Fane", "nationality", "Velmarian"),
            ("Oriel Fane", "was a", "film director"),
            ("Oriel Fane", "married to", "Juno Halleck"),
            ("Juno Halleck", "was an", "actress"),
            ("Tobin Fane", "son of", "Oriel Fane"),
            ("Tobin Fane", "son of", "Juno Halleck"),
            ("Tobin Fane", "born in", "Quifen"),
            ("The Salt Ledger", "directed by", "Oriel Fane"),
            ("The Salt Ledger", "released in", "1987"),
        ],
    ),
    (
        "Velbrin Pharma is a drug company founded in 1954 by Ada Morrow. Its headquarters are in "
        "Quifen, the capital of Estara, and it manufactures Ostarizumab.",
        [
            ("Velbrin Pharma", "is a", "drug company"),
            ("Velbrin Pharma", "founded in", "1954"),
            ("Velbrin Pharma", "founded by", "Ada Morrow"),
            ("Velbrin Pharma", "headquarters in", "Quifen"),
            ("Quifen", "capital of", "Estara"),
            ("Velbrin Pharma", "manufactures", "Ostarizumab"),
        ],
    ),
]


# What the JSON (chat) prompts ask for, as JSON schemas a backend can constrain decoding to.
_STRINGS = {"type": "array", "items": {"type": "string"}}
OPENIE_JSON_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"triples": {"type": "array", "items": {**_STRINGS, "minItems": 3, "maxItems": 3}}},
        "required": ["triples"],
        "additionalProperties": False,
    },
    sort_keys=True,
)
NER_JSON_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"named_entities": _STRINGS},
        "required": ["named_entities"],
        "additionalProperties": False,
    },
    sort_keys=True,
)


# The line-format OpenIE answer as a grammar a constrained decoder follows (hoprag/llm/grammar.py):
# "(subject | relation | object)" lines, then at most a blank line, which ends the answer. Parts hold
# no "(", ")", "|" or newline (a name's own parentheses, "Aylwin (film)", would make the line
# ambiguous to read) and run to 120 characters at most (a 270M model otherwise copies whole
# sentences into a part). Spaces around "|" belong to the parts; the parser strips them.
OPENIE_LINES_GRAMMAR = r"""
start: triple+ "\n"?
triple: "(" PART "|" PART "|" PART ")\n"
PART: /[^|()\n]{1,120}/
"""


def _openie_line_params(max_new_tokens: int) -> GenerationParams:
    """Generation settings of the line-format OpenIE prompts (student and few-shot)."""
    return GenerationParams(
        max_new_tokens,
        0.0,
        ("\n\n", "Passage:"),
        stop_on_repeated_line=True,
        grammar=OPENIE_LINES_GRAMMAR,
        task=TASK_OPENIE,
    )


def _triple_line(t: tuple[str, str, str]) -> str:
    return f"({t[0]} | {t[1]} | {t[2]})"


def openie_prompt(
    passage: str, style: PromptStyle, max_new_tokens: int = 192, student: bool = False
) -> PromptSpec:
    """Triples (subject | relation | object) for one passage; entities are their subjects/objects.
    ``student``: the short prompt of a distilled student (no examples; same output format)."""
    if student:
        prompt = f"{_OPENIE_INSTRUCTION}\n\nPassage: {passage}\nTriples:\n"
        params = _openie_line_params(max_new_tokens)
        return PromptSpec(prompt, params, "lines")
    if style == "completion":
        shots = []
        for text, triples in _FEW_SHOT:
            lines = "\n".join(_triple_line(t) for t in triples)
            shots.append(f"Passage: {text}\nTriples:\n{lines}")
        head = "Extract the facts of each passage as (subject | relation | object) triples, one per line.\n\n"
        prompt = head + "\n\n".join(shots) + f"\n\nPassage: {passage}\nTriples:\n"
        params = _openie_line_params(max_new_tokens)
        return PromptSpec(prompt, params, "lines")
    messages: list[ChatMessage] = [{"role": "system", "content": _OPENIE_CHAT_INSTRUCTION}]
    for text, triples in _CHAT_EXAMPLES:
        messages.append({"role": "user", "content": f"Passage: {text}"})
        messages.append({"role": "assistant", "content": json.dumps({"triples": [list(t) for t in triples]})})
    messages.append({"role": "user", "content": f"Passage: {passage}"})
    params = GenerationParams(max_new_tokens * 2, 0.0, (), json_schema=OPENIE_JSON_SCHEMA, task=TASK_OPENIE)
    return PromptSpec(messages, params, "json")


def ner_prompt(text: str, style: PromptStyle, max_new_tokens: int = 48, student: bool = False) -> PromptSpec:
    """Named entities mentioned in a question (or a short passage). ``student``: the short prompt
    of a distilled student (no examples; same output format)."""
    if student:
        prompt = f"{_NER_INSTRUCTION}\n\nQuestion: {text}\nEntities:"
        return PromptSpec(prompt, GenerationParams(max_new_tokens, 0.0, ("\n",), task=TASK_NER), "lines")
    if style == "completion":
        shots = "\n\n".join(f"Question: {q}\nEntities: {'; '.join(ents)}" for q, ents in _NER_FEW_SHOT)
        prompt = (
            "List the named entities (people, places, organizations, works, products, ...) "
            f"that each question mentions.\n\n{shots}\n\nQuestion: {text}\nEntities:"
        )
        return PromptSpec(prompt, GenerationParams(max_new_tokens, 0.0, ("\n",), task=TASK_NER), "lines")
    q, ents = _NER_FEW_SHOT[0]
    messages: list[ChatMessage] = [
        {
            "role": "system",
            "content": 'List the named entities mentioned in the text. Answer with JSON only: {"named_entities": [...]}',
        },
        {"role": "user", "content": q},
        {"role": "assistant", "content": json.dumps({"named_entities": ents})},
        {"role": "user", "content": text},
    ]
    params = GenerationParams(max_new_tokens * 2, 0.0, (), json_schema=NER_JSON_SCHEMA, task=TASK_NER)
    return PromptSpec(messages, params, "json")


def last_block(prompt: str, head: str, tail: str) -> str | None:
    """The text between the last ``head`` and the following ``tail`` of a few-shot prompt: the
    instance being asked about (``None`` when ``head`` does not occur)."""
    start = prompt.rfind(head)
    if start < 0:
        return None
    body = prompt[start + len(head) :]
    end = body.find(tail)
    return (body[:end] if end >= 0 else body).strip()

"""What kind of answer a question asks for, and whether an answer is of that kind.

English marks the kind in the question's first word: a yes/no question opens with an auxiliary
verb ("Are groclopril and Lemavir used against the same disease?"), an open question with a
question word ("Who directed ...?"). A small model answering from search findings often gives a
name it found on the way to a yes/no question ("Wotranditis"), or "yes" to an open one. Such an
answer is never right, so every QA mode checks the kind and treats a mismatch as no answer
(``NotEnoughInfo``, the reason in the trace) rather than passing on an answer to another question.

Only the first word decides, so questions of any domain and wording are classified the same way;
whatever it does not recognize ("In which year ...", "Tell me whether ...") is checked for nothing.
"""

from __future__ import annotations

import re
from typing import Literal

AnswerKind = Literal["yes_no", "open", "any"]

# the first word of a yes/no question
AUXILIARY_VERBS = frozenset(
    [
        "am",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "don't",
        "doesn't",
        "didn't",
        "haven't",
        "hasn't",
        "hadn't",
        "can't",
        "couldn't",
        "won't",
        "wouldn't",
        "shouldn't",
    ]
)
# the first word of an open question
QUESTION_WORDS = frozenset(["who", "whom", "whose", "what", "which", "when", "where", "why", "how"])
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_YES_NO_START = re.compile(r"\s*(yes|no|true|false)\b", re.IGNORECASE)
_BARE_YES_NO = re.compile(r"\s*(yes|no|true|false)[\s.!]*", re.IGNORECASE)


def _words(question: str) -> list[str]:
    return _WORD.findall(question.lower().replace("’", "'"))


def offers_alternatives(question: str) -> bool:
    """Whether ``question`` names its possible answers ("Is A or B older?", "Which came first, A or
    B?"): it has the word "or"."""
    return "or" in _words(question)


def answer_kind(question: str) -> AnswerKind:
    """``yes_no`` for a question opening with an auxiliary verb, unless it offers alternatives
    ("Is A or B older?" names its answer); ``open`` for one opening with a question word;
    otherwise ``any``."""
    words = _words(question)
    if not words:
        return "any"
    if words[0] in AUXILIARY_VERBS:
        return "any" if offers_alternatives(question) else "yes_no"
    if words[0] in QUESTION_WORDS:
        return "open"
    return "any"


def fit_answer(question: str, answer: str) -> tuple[str, str | None]:
    """``answer`` in the form ``question`` asks for, or ``""`` and the reason when it is of the
    wrong kind. A yes/no answer keeps only its yes/no word ("Yes, both are" → "Yes"; "true" →
    "yes"); an empty answer (the model did not know) passes unchanged."""
    if not answer:
        return answer, None
    kind = answer_kind(question)
    if kind == "yes_no":
        m = _YES_NO_START.match(answer)
        if m is None:
            return "", f"{answer!r} does not answer a yes/no question"
        word = m.group(1)
        lowered = word.lower()
        return (word if lowered in ("yes", "no") else "yes" if lowered == "true" else "no"), None
    if kind == "open" and _BARE_YES_NO.fullmatch(answer):
        return "", f"{answer!r} answers yes/no to a question that asks for a name or value"
    return answer, None

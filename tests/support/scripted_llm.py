"""A deterministic, rule-based LLM for tests: it really reads the prompt and answers from it.

It implements the :class:`hoprag.llm.base.LLM` protocol, so it can run in-process or behind the
OpenAI-protocol loopback server (then Ray Data actors reach it over real HTTP). Rules:

* OpenIE prompts (``Passage: ...\\nTriples:``): for each sentence, the first capitalized span is
  the subject, the last one the object, the words between them the relation.
* NER prompts (``Question: ...\\nEntities:``): the capitalized spans of the question after its
  first word.
* Markers in a passage inject faults: ``[[GARBAGE]]`` → unparseable text, ``[[EMPTY]]`` → empty
  answer, ``[[FOURPART]]`` → a 4-part tuple, ``[[TWOPART]]`` → a 2-part tuple, ``[[SLOW]]`` →
  sleeps ``slow_s`` before answering (while ``slow_enabled``), to trigger client time-outs.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Sequence

from hoprag.extraction.prompts import last_block
from hoprag.llm.base import Completion, GenerationParams, Prompt, PromptStyle, truncate_at_stop

_SPAN = re.compile(r"(?:[A-Z0-9][\w'’-]*)(?:\s+(?:[A-Z0-9][\w'’-]*))*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_MARKER = re.compile(r"\[\[[A-Z]+\]\]")


def rule_triples(passage: str) -> list[tuple[str, str, str]]:
    """The triples the rules extract from ``passage`` (what an ideal extractor would say)."""
    triples = []
    for sentence in _SENTENCE.split(passage.strip()):
        sentence = sentence.strip().rstrip(".!?")
        spans = list(_SPAN.finditer(sentence))
        if len(spans) < 2:
            continue
        first, last = spans[0], spans[-1]
        relation = sentence[first.end() : last.start()].strip(" ,")
        if relation:
            triples.append((first.group(0), relation, last.group(0)))
    return triples


class RuleBasedLLM:
    """Deterministic OpenIE/NER answers; counts the prompts it was given by kind."""

    def __init__(self, slow_s: float = 0.0, delay_s: float = 0.0) -> None:
        self.slow_s = slow_s
        self.delay_s = delay_s
        self.slow_enabled = True
        self.calls: Counter[str] = Counter()
        self.passages: list[str] = []
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return "rule-based-test-llm"

    @property
    def prompt_style(self) -> PromptStyle:
        return "completion"

    def _answer(self, prompt: str) -> str:
        passage = last_block(prompt, "Passage:", "\nTriples:")
        if passage is not None and prompt.rstrip().endswith("Triples:"):
            with self._lock:
                self.calls["openie"] += 1
                self.passages.append(passage)
            if "[[SLOW]]" in passage and self.slow_enabled:
                time.sleep(self.slow_s)
            if "[[GARBAGE]]" in passage:
                return "I am sorry, I cannot help with that."
            if "[[EMPTY]]" in passage:
                return ""
            triples = rule_triples(_MARKER.sub("", passage))
            lines = [f"({s} | {r} | {o})" for s, r, o in triples]
            if "[[FOURPART]]" in passage and lines:
                s, r, o = triples[0]
                words = r.split()
                lines.append(f"({s} | {words[0]} | {' '.join(words[1:]) or 'x'} | {o})")
            if "[[TWOPART]]" in passage and lines:
                s, r, o = triples[0]
                lines.append(f"({s} | {r} {o})")
            return "\n".join(lines) + "\n\n"
        question = last_block(prompt, "Question:", "\nEntities:")
        if question is not None:
            with self._lock:
                self.calls["ner"] += 1
            words = question.split(maxsplit=1)
            rest = words[1] if len(words) > 1 else ""
            return "; ".join(m.group(0) for m in _SPAN.finditer(rest.rstrip("?"))) + "\n"
        with self._lock:
            self.calls["other"] += 1
        return ""

    def generate(self, prompts: Sequence[Prompt], params: GenerationParams) -> list[Completion]:
        if self.delay_s:
            time.sleep(self.delay_s * len(prompts))
        out = []
        for p in prompts:
            text = p if isinstance(p, str) else "\n".join(m["content"] for m in p)
            raw = self._answer(text)
            cut, _ = truncate_at_stop(raw, params.stop)
            out.append(
                Completion(text=cut, prompt_tokens=len(text.split()), completion_tokens=len(cut.split()))
            )
        return out

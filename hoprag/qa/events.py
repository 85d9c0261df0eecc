"""Progress events of one question being answered (the streamed QA routes).

A QA system's ``answer(question, top_k, events=sink)`` reports each stage to ``sink`` as it
finishes and streams the final answer call's text through it; without a sink nothing changes,
and with one the returned :class:`~hoprag.planner.trace.Answer` is the same (only timings
differ). Two kinds of events reach :attr:`EventSink.emit`:

- ``stage``: ``{"stage": name, ...}``, with ``name`` one of ``plan`` (a (sub-)question's plan),
  ``seeds`` (a step's entities and the KG seeds they matched), ``triples`` (a step's triples and
  documents), ``step_answer``, ``update`` (the plan update after a step: a final answer or the
  new plan);
- ``token``: ``{"text": delta}``, the answer as the final LLM call generates it: the deltas are
  what :func:`~hoprag.planner.parsing.answer_text_so_far` settles of the output so far, and
  :meth:`EventSink.finish` adds the rest of the answer, so that all of them joined are the
  answer (unless the parser rejected an output that looked like one; the final answer is what
  counts). A yes/no question's answer is one word known only once the output is parsed and
  checked (:mod:`hoprag.planner.answer_type`), so it comes as one token from ``finish``.

Cancelling :attr:`EventSink.cancel` (the listener went away) makes the next event raise
:class:`StreamCancelled` in the pipeline and stops the LLM call being streamed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hoprag.llm.streaming import CancelToken
from hoprag.planner.answer_type import answer_kind
from hoprag.planner.parsing import answer_text_so_far
from hoprag.planner.trace import DocumentEvidence, TripleEvidence

logger = logging.getLogger(__name__)


class StreamCancelled(Exception):
    """The listener of a streamed answer went away: the pipeline stops."""


@dataclass
class EventSink:
    """Where a pipeline reports its progress; ``emit(kind, payload)`` is called in its thread."""

    emit: Callable[[str, dict[str, Any]], None]
    cancel: CancelToken = field(default_factory=CancelToken)
    _output: str = ""
    _sent: str = ""

    def stage(self, name: str, **payload: Any) -> None:
        """One finished stage (``plan``, ``seeds``, ``triples``, ``step_answer``, ``update``)."""
        self._send("stage", {"stage": name, **payload})

    def answer_stream(self, question: str) -> Callable[[str], None]:
        """Where the answer call for ``question`` sends its output as generated:
        :meth:`answer_output`, or nowhere for a yes/no question (the model's "Yes, both are German"
        answers "Yes"; :meth:`finish` sends it)."""
        if answer_kind(question) == "yes_no":
            return _discard
        return self.answer_output

    def answer_output(self, delta: str) -> None:
        """More of the final answer call's output: emits the answer text it settles, if any."""
        self._output += delta
        settled = answer_text_so_far(self._output)
        if settled.startswith(self._sent) and len(settled) > len(self._sent):
            self._send("token", {"text": settled[len(self._sent) :]})
            self._sent = settled

    def finish(self, answer: str) -> None:
        """The answer is known: emit the part of it not streamed yet."""
        self._check()
        if not answer.startswith(self._sent):
            logger.info("streamed answer text %r is not a prefix of the answer %r", self._sent, answer)
            return
        if len(answer) > len(self._sent):
            self._send("token", {"text": answer[len(self._sent) :]})
            self._sent = answer

    def _send(self, kind: str, payload: dict[str, Any]) -> None:
        self._check()
        self.emit(kind, payload)

    def _check(self) -> None:
        if self.cancel.cancelled:
            raise StreamCancelled("the listener went away")


def _discard(delta: str) -> None:
    """An answer output nobody listens to."""


def triples_payload(triples: Sequence[TripleEvidence]) -> list[dict[str, Any]]:
    """Triples as event payload (the QA response's triple fields)."""
    return [{k: v for k, v in asdict(t).items() if k != "triple_id"} for t in triples]


def documents_payload(documents: Sequence[DocumentEvidence]) -> list[dict[str, Any]]:
    return [asdict(d) for d in documents]

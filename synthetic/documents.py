"""Rendering: one multi-sentence document per entity, and the facts each document states.

A document is a paragraph about its entity: an intro sentence (name, kind and year), a protein's mass,
one sentence per fact or per pair of facts, and a few distractor (filler) sentences that state nothing
of the world, in a seeded random order after the intro. Each fact is worded by a template of its relation
(``phrasing.py``): alone, conjoined with a second fact, as a relative clause, or as a modifier phrase
hosted by another clause. Later sentences may name the entity by pronoun when no other entity mentioned
before it in the document takes the same pronoun.

The fact ``(a, r, b)`` is stated in ``a``'s document (``encodes`` also in ``b``'s), always with ``b``
named. Documents on the *test side* (supporting documents of test questions that support no training
question) word each fact with a held-out template when its relation has one; every other document never
uses a held-out template.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .config import SyntheticConfig
from .fillers import FILLERS, INTRO_TYPE_WORDS, INTROS, MASS_SENTENCES
from .phrasing import (
    APPOSITION,
    FRONTED,
    MODIFIER_KINDS,
    PHRASES,
    STANDALONE_KINDS,
    VP,
    Phrase,
    agree,
    template_ids,
)
from .relation_texts import _RELATIONS
from .schema import _PERSON_TYPES, _TYPES
from .world import _World

SINGLE = "single"
CONJUNCTION = "conjunction"
RELATIVE_CLAUSE = "relative_clause"
FRAMES = (SINGLE, CONJUNCTION, RELATIVE_CLAUSE, APPOSITION, FRONTED)
"""How the sentence stating a fact is built (``frame`` in ``facts.json``)."""


@dataclass
class _Fact:
    rel: str
    subj: int
    objs: list[int]  # several only for ``stars`` (coordinated: "A and B")
    outgoing: bool  # the document's entity is the subject
    tid: str
    phrase: Phrase


@dataclass
class _Sentence:
    frame: str  # intro | mass | filler | one of FRAMES
    facts: list[_Fact] = field(default_factory=list)  # in the order they are mentioned
    template: str = ""  # intro / mass / filler text (a filler is a verb phrase)
    template_id: str = ""  # intro / mass template id
    host: str = ""  # modifier frames: "intro", "fact" or "filler"
    host_vp: str = ""  # modifier frames hosted by the intro or a filler: its verb phrase


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


class _Renderer:
    def __init__(self, config: SyntheticConfig, world: _World, held_out: set[str], test_side: set[int]):
        self.config = config
        self.phrasing = config.phrasing
        self.world = world
        self.held_out = held_out
        self.test_side = test_side
        self.rng = random.Random(f"hoprag-synthetic:{config.seed}:documents")

    # -- choices -------------------------------------------------------------------------------------

    def _phrase(self, rel: str, outgoing: bool, test_side: bool) -> tuple[str, Phrase]:
        options = [
            (tid, p)
            for tid, p in zip(template_ids(rel), PHRASES[rel], strict=True)
            if outgoing or p.kind in STANDALONE_KINDS
        ]
        held = [o for o in options if o[0] in self.held_out]
        kept = [o for o in options if o[0] not in self.held_out]
        options = (held or options) if test_side else kept
        return options[self.rng.randrange(len(options))]

    def _facts(self, eid: int) -> list[_Fact]:
        w = self.world
        test_side = eid in self.test_side
        units: list[tuple[str, int, list[int], bool]] = []
        stars: list[int] = []
        for rel, obj in w.out[eid]:
            if rel == "stars":
                stars.append(obj)
            else:
                units.append((rel, eid, [obj], True))
        if stars:
            units.append(("stars", eid, stars, True))
        units.extend((rel, subj, [eid], False) for rel, subj in w.inn[eid] if _RELATIONS[rel].both_docs)
        facts = []
        for rel, subj, objs, outgoing in units:
            tid, phrase = self._phrase(rel, outgoing, test_side)
            facts.append(_Fact(rel, subj, objs, outgoing, tid, phrase))
        self.rng.shuffle(facts)
        return facts

    def _plan(self, eid: int) -> list[_Sentence]:
        """The document's sentences in order, subjects not yet decided."""
        rng = self.rng
        p = self.phrasing
        etype = self.world.types[eid]
        facts = self._facts(eid)
        k = rng.randrange(len(INTROS[etype]))
        intro = _Sentence("intro", template=INTROS[etype][k], template_id=f"intro:{etype}/{k}")
        head = [intro]
        if etype == "protein":
            m = rng.randrange(len(MASS_SENTENCES))
            head.append(_Sentence("mass", template=MASS_SENTENCES[m], template_id=f"mass/{m}"))
        fillers = list(FILLERS[etype])
        rng.shuffle(fillers)
        n_fillers = sum(rng.random() < p.filler_sentence_probability for _ in range(p.max_filler_sentences))

        def filler_vp() -> str:
            return fillers.pop() if fillers else FILLERS[etype][rng.randrange(len(FILLERS[etype]))]

        mods = [f for f in facts if f.outgoing and f.phrase.kind in MODIFIER_KINDS]
        vps = [f for f in facts if f.outgoing and f.phrase.kind == VP]
        rest = [f for f in facts if f not in mods and f not in vps]
        body: list[_Sentence] = []
        singles: list[_Fact] = []
        while vps:
            f = vps.pop(0)
            if vps and rng.random() < p.two_fact_probability:
                frame = CONJUNCTION if rng.random() < 0.5 else RELATIVE_CLAUSE
                body.append(_Sentence(frame, [f, vps.pop(0)]))
            else:
                singles.append(f)
        for f in mods:
            if singles and rng.random() < p.two_fact_probability:
                host = singles.pop(rng.randrange(len(singles)))
                body.append(_Sentence(f.phrase.kind, [f, host], host="fact"))
            elif len(facts) > 1 and not intro.facts and intro.template.startswith("{s} "):
                # (A document's only fact never goes into its intro: documents have two sentences or more.)
                intro.facts = [f]
                intro.host = "intro"
            else:
                body.append(_Sentence(f.phrase.kind, [f], host="filler", host_vp=filler_vp()))
        body.extend(_Sentence(SINGLE, [f]) for f in singles)
        body.extend(_Sentence(SINGLE, [f]) for f in rest)
        rng.shuffle(body)
        for _ in range(n_fillers):
            body.insert(rng.randrange(len(body) + 1), _Sentence("filler", template=filler_vp()))
        return head + body

    # -- wording -------------------------------------------------------------------------------------

    def _objects(self, f: _Fact) -> str:
        return " and ".join(self.world.names[o] for o in f.objs)

    def _vp(self, f: _Fact, pronoun: str | None = None) -> str:
        lead = "lead role" if len(f.objs) == 1 else "lead roles"
        return agree(f.phrase.text.format(o=self._objects(f), lead=lead), pronoun)

    def _text(self, f: _Fact) -> str:
        """A modifier's or clause's text with its slots filled ({s} by name; a modifier has none)."""
        w = self.world
        lead = "lead role" if len(f.objs) == 1 else "lead roles"
        return f.phrase.text.format(s=w.names[f.subj], o=self._objects(f), lead=lead)

    def _intro_vp(self, eid: int, template: str) -> str:
        w = self.world
        return template[len("{s} ") : -1].format(y=w.years[eid], kind=w.kind[eid], m=w.mass[eid])

    def _render(self, eid: int, s: _Sentence, pronoun: str | None) -> str:
        """The sentence; its subject is ``pronoun`` if given (only in frames that allow one), else the name."""
        w = self.world
        name = w.names[eid]
        subj = pronoun or name
        if s.frame in ("intro", "mass"):
            values = {"y": w.years[eid], "kind": w.kind[eid], "m": w.mass[eid]}
            if not s.facts:
                if pronoun:
                    return _cap(f"{pronoun} {agree(self._intro_vp(eid, s.template), pronoun)}.")
                return s.template.format(s=name, **values)
            f = s.facts[0]
            host = self._intro_vp(eid, s.template)
            if f.phrase.kind == APPOSITION:
                return f"{name}, {self._text(f)}, {host}."
            return f"{self._text(f)}, {name} {host}."
        if s.frame == "filler":
            return _cap(f"{subj} {agree(s.template, pronoun)}.")
        first = s.facts[0]
        if s.frame == SINGLE:
            if first.phrase.kind == VP:
                # An incoming fact (``encodes`` in the protein's document) is said of its own subject.
                who = subj if first.outgoing else w.names[first.subj]
                return _cap(f"{who} {self._vp(first, pronoun if first.outgoing else None)}.")
            return _cap(self._text(first))
        if s.frame == CONJUNCTION:
            return _cap(f"{subj} {self._vp(first, pronoun)} and {self._vp(s.facts[1], pronoun)}.")
        if s.frame == RELATIVE_CLAUSE:
            who = "who" if w.types[eid] in _PERSON_TYPES else "which"
            return f"{name}, {who} {self._vp(first)}, {self._vp(s.facts[1])}."
        host = self._vp(s.facts[1], pronoun) if s.host == "fact" else agree(s.host_vp, pronoun)
        if s.frame == APPOSITION:
            return f"{name}, {self._text(first)}, {agree(host, None)}."
        assert s.frame == FRONTED, s.frame
        return f"{self._text(first)}, {subj} {host}."

    @staticmethod
    def _pronoun_allowed(s: _Sentence) -> bool:
        if s.frame == "filler" or s.frame == CONJUNCTION or (s.frame == FRONTED and s.host != "intro"):
            return True
        if s.frame == "mass":
            return s.template.startswith("{s} ")
        return s.frame == SINGLE and s.facts[0].outgoing and s.facts[0].phrase.kind == VP

    # -- documents -------------------------------------------------------------------------------------

    def document(self, eid: int) -> tuple[str, list[dict[str, Any]]]:
        """The text of ``eid``'s document and the facts it states, in order."""
        w = self.world
        rng = self.rng
        plan = self._plan(eid)
        own = w.pronoun[eid]
        domain = w.domain(eid)
        mentioned: list[str] = []  # pronouns of the other entities mentioned so far
        sentences: list[str] = []
        stated: list[dict[str, Any]] = []
        for s in plan:
            before = s.facts[0].objs if s.frame == FRONTED else []
            clash = own in mentioned or any(w.pronoun[o] == own for o in before)
            allowed = bool(sentences) and self._pronoun_allowed(s) and not clash
            pronoun = own if allowed and rng.random() < self.phrasing.pronoun_probability else None
            text = self._render(eid, s, pronoun)
            sentences.append(text)
            stated.extend(self._stated(eid, s, text, pronoun, domain))
            for f in s.facts:
                mentioned.extend(w.pronoun[o] for o in f.objs if o != eid)
                if not f.outgoing:
                    mentioned.append(w.pronoun[f.subj])
                if len(f.objs) > 1:
                    mentioned.append("they")  # "A and B" could be "they"
        return " ".join(sentences), stated

    def _stated(
        self, eid: int, s: _Sentence, text: str, pronoun: str | None, domain: str
    ) -> list[dict[str, Any]]:
        w = self.world
        name = w.names[eid]
        out: list[dict[str, Any]] = []

        def record(head: str, rel: str, tail: str, template: str, kind: str, frame: str) -> None:
            out.append(
                {
                    "head": head,
                    "relation": rel,
                    "tail": tail,
                    "template": template,
                    "domain": domain,
                    "type": kind,
                    "frame": frame,
                    "pronoun": pronoun,
                    "sentence": text,
                }
            )

        if s.frame == "intro":
            etype = w.types[eid]
            record(name, _TYPES[etype].year_attr, str(w.years[eid]), s.template_id, "attribute", SINGLE)
            if w.kind[eid]:
                kind = w.kind[eid].split(" ", 1)[1] + (" company" if etype == "company" else "")
                record(name, "kind", kind, s.template_id, "attribute", SINGLE)
            elif etype in INTRO_TYPE_WORDS:
                # The intro says what the entity is even where the world draws no kind: a true fact.
                record(name, "kind", INTRO_TYPE_WORDS[etype], s.template_id, "attribute", SINGLE)
        elif s.frame == "mass":
            record(name, "mass_kda", f"{w.mass[eid]} kilodaltons", s.template_id, "attribute", SINGLE)
        for f in s.facts:
            frame = s.frame if s.frame != "intro" else f.phrase.kind
            for o in f.objs:
                record(w.names[f.subj], f.rel, w.names[o], f.tid, "relation", frame)
        return out


def render_documents(
    config: SyntheticConfig, world: _World, held_out: set[str], test_side: set[int]
) -> tuple[dict[str, str], dict[str, list[dict[str, Any]]]]:
    """``({title: text}, {title: [stated fact, ...]})`` for every entity, in entity order.

    ``held_out``: template ids only ``test_side`` documents (entity ids) may use.
    """
    renderer = _Renderer(config, world, held_out, test_side)
    corpus: dict[str, str] = {}
    facts: dict[str, list[dict[str, Any]]] = {}
    for eid, name in enumerate(world.names):
        corpus[name], facts[name] = renderer.document(eid)
    return corpus, facts

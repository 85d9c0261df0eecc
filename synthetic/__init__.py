"""Deterministic synthetic multi-hop QA benchmark generator.

The generator builds a small invented world (typed entities and relations in several domains), renders
one short Wikipedia-like paragraph per entity, and asks 2-4 hop questions over it. The output uses the
GFM-RAG raw layout::

    OUT/raw/dataset_corpus.json   {title: text}
    OUT/raw/train.json            [question, ...]
    OUT/raw/test.json             [question, ...]
    OUT/raw/world.json            entities, facts, the gold reasoning triples of every question, the
                                  phrasing templates, held-out template ids and test-side documents
    OUT/raw/facts.json            {title: [{head, relation, tail, template, domain, type, frame,
                                  pronoun, sentence}, ...]}: the facts each document states

Phrasing (``phrasing.py``, ``documents.py``, ``PhrasingConfig``): each relation has several templates with
stable ids (``born_in/2``) of four syntactic kinds (verb phrase, clause, apposition, fronted phrase); a
document's later sentences may name its entity by pronoun where unambiguous; some sentences state two
facts (conjoined, as a relative clause, or a modifier hosted by another fact) and some state none
(fillers). ``held_out_templates`` / ``held_out_template_fraction`` reserve templates for the *test side*:
the supporting documents of test questions that support no training question, which use them for every
relation that has one, while every other document never does. ``facts.json`` records each stated fact with
its template and sentence, relation facts (``type: relation``, world.json's facts) and the intro's
attributes (``type: attribute``: year, kind, a protein's mass) alike. docs/synthetic.md has examples.

Every question record has ``id, question, answer, answer_aliases, supporting_facts, type, hops, domain,
supporting_entities, spelling, plan``. ``hops`` is the number of supporting documents (2-4), which is also
the number of retrieval hops a reader needs. ``supporting_entities[0]`` is the question's *topic entity*,
the one it starts from (a chain's start, a comparison's first side).

``plan`` is the question's gold search plan in the PAI-2 planner's format, one ``{step, answer, ref}`` per
reasoning triple: ``step`` is a one-hop question ("Who directed [the film written by Wike Micluther]?"),
``answer`` what it finds, and ``ref`` the ``[description]`` by which later steps name that answer (``null``
when none does). A comparison's plan reaches each side's compared entity first, then asks each side's
value; the final answer (which side, or yes/no) is the question's. The topic is named as the question
names it (respelled or not). Steps are worded by an RNG of their own, so plans change no question.
``hoprag distill`` teaches the ``plan`` and ``update`` tasks from it.

Variant spellings: ``variant_spelling_fraction`` (default 0.2) of each split's questions name their topic
entity differently from the world (``spelling.py``): ``case`` ("brado tranford"), ``punctuation``
("Brado-Tranford", "KLARN-5", "Brados Ledger"), ``abbreviation`` ("B. Tranford", "B. ensis", "Brado Tech.")
or ``the_prefix`` ("Silent Ledger" for "The Silent Ledger", "the Brado Systems"); ``spelling`` records the
kind, ``exact`` for the others. Only a variant that changes the text and still refers to that entity alone
is used; answers, supporting facts and reasoning never change. The respelled questions and variants are
drawn by an RNG of their own, so the other questions are identical to those of fraction 0. Indexing keeps
``spelling`` as question metadata, so ``hoprag eval retrieval --by spelling`` and the ``eval run`` report
break results down by it.

Names are invented (syllable-based) so that an LLM extracting triples from the documents cannot lean on
what it memorised about real entities. Each document states only facts that are true in the world, and
the fact ``(a, r, b)`` is always stated in ``a``'s document (for ``encodes`` also in ``b``'s), with ``b``
named (``a`` by name or pronoun).

Question types:

* ``bridge``: a chain of functional relations followed forwards from a named entity ("In which country
  is the birthplace of the director of X?"), optionally ending in a year attribute ("When was ...
  born?").
* ``comparison``: two entities of the same type compared on a year attribute (answer: one of the two
  names) or on a shared relation object (answer: yes/no); either side may be reached through one hop
  ("the director of X"), giving 2, 3 or 4 supporting documents. A year comparison whose two sides take the
  same hop names the hop's role once ("The director of which film was born earlier, A or B?", answer: a
  film); when the hops differ, each side is described by its own ("Which person was born earlier, the
  director of A or the screenwriter of B?", answer: a person). Generators before 2026-12-03 used the
  role template for differing hops too, so ~40% of their 4-hop year comparisons asked about a role one
  side's answer never took; regenerating changes only those questions.
* ``compositional``: a chain whose first step is an inverse lookup ("the drug that treats D") that is
  then composed with further (forward or inverse) steps; every inverse step is unique in the world.

Every step of every question is unambiguous: a forward step needs exactly one fact ``(x, r, *)`` and an
inverse step exactly one fact ``(*, r, x)`` in the whole world, distractors included. Distractor entities
never appear on a reasoning chain and their documents are never supporting documents.
"""

from __future__ import annotations

from .benchmark import (
    SAMPLE_CONFIG,
    SAMPLE_DIR,
    SyntheticBenchmark,
    WorldEntity,
    generate,
    write_benchmark,
)
from .config import (
    DEFAULT_DOMAINS,
    DOMAINS,
    QUESTION_TYPES,
    PhrasingConfig,
    SyntheticConfig,
    minimum_documents,
)

__all__ = [
    "DEFAULT_DOMAINS",
    "DOMAINS",
    "QUESTION_TYPES",
    "SAMPLE_CONFIG",
    "SAMPLE_DIR",
    "PhrasingConfig",
    "SyntheticBenchmark",
    "SyntheticConfig",
    "WorldEntity",
    "generate",
    "minimum_documents",
    "write_benchmark",
]

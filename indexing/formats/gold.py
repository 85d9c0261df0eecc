"""Gold facts of the published benchmarks, and how a fact is matched against extracted triples.

2WikiMultihopQA gives each question its gold facts (``evidences``: ``[subject, relation, object]``,
names as Wikidata labels). MuSiQue gives them in part: a decomposition step written
``SUBJECT >> relation`` (a Wikidata hop) with an answer is the fact ``(SUBJECT, relation, answer)``;
``#1 >> ...`` steps, which name an earlier answer, and free-text sub-questions are left out.

Names are compared normalized (lowercase, punctuation to spaces, a leading article dropped), either
*equal* or *loose*: one name may contain the other as whole words (the paragraph "Aylwin (film)" and
the label "Aylwin"). ``hoprag bench evidences`` scores extraction with these rules and ``hoprag
distill`` corrects a teacher's triples with them (:mod:`distillation.gold`), so both read a fact the
same way; both merge several extractors' triples as one committee (:func:`committee_triples`) alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hoprag.text import normalize_entity

Triple = tuple[str, str, str]

_ARTICLES = ("the ", "a ", "an ")
WIKIDATA_HOP = re.compile(r"^\s*(?P<subject>#\d+|[^#\s][^>]*?)\s*>>\s*(?P<relation>\S.*?)\s*$")
"""A MuSiQue decomposition step written as a Wikidata hop, `SUBJECT >> relation`; the subject is a
name or `#k`, a reference to step k's answer."""


def gold_facts(question: dict[str, Any]) -> list[Triple]:
    """A read question's gold facts: its ``evidences`` (2Wiki), else its decomposition steps written
    ``SUBJECT >> relation`` with a non-empty answer (MuSiQue; module docstring)."""
    if question.get("evidences"):
        return [(h, r, t) for h, r, t in question["evidences"]]
    facts = []
    for step in question.get("decomposition") or []:
        hop = WIKIDATA_HOP.match(step.get("question") or "")
        if hop and not hop["subject"].startswith("#") and (step.get("answer") or "").strip():
            facts.append((hop["subject"], hop["relation"], step["answer"].strip()))
    return facts


def normalize_argument(text: str) -> str:
    """Indexing's entity normalization with a leading article dropped."""
    norm = normalize_entity(text)
    for article in _ARTICLES:
        if norm.startswith(article) and len(norm) > len(article):
            return norm[len(article) :]
    return norm


def names_match(a: str, b: str, loose: bool) -> bool:
    """Whether two *normalized* names are the same (equal), or one contains the other as whole words
    (loose)."""
    if a == b:
        return bool(a)
    return loose and bool(a and b) and (f" {a} " in f" {b} " or f" {b} " in f" {a} ")


def links_pair(fact: Triple, triple: Triple, loose: bool) -> bool:
    """Whether ``triple`` links the fact's subject and object, in either direction."""
    head, tail = normalize_argument(fact[0]), normalize_argument(fact[2])
    s, o = normalize_argument(triple[0]), normalize_argument(triple[2])
    return any(names_match(x, head, loose) and names_match(y, tail, loose) for x, y in ((s, o), (o, s)))


def pair_found(fact: Triple, triples: Sequence[Triple], loose: bool) -> bool:
    """Whether any of ``triples`` links the fact's subject and object, in either direction."""
    return any(links_pair(fact, t, loose) for t in triples)


def committee_triples(
    first: Sequence[Sequence[str]], others: Sequence[Sequence[Sequence[str]]]
) -> list[Triple]:
    """The first teacher's triples, then each other teacher's triples whose subject-object pair
    (either direction, names normalized) no earlier triple links: a committee finds pairs either
    member misses, and where both link a pair the first teacher's relation stands."""
    kept: list[Triple] = []
    pairs: set[frozenset[str]] = set()
    for rows in (first, *others):
        for row in rows:
            if len(row) != 3:
                continue
            pair = frozenset((normalize_entity(row[0]), normalize_entity(row[2])))
            if rows is first or pair not in pairs:
                kept.append((row[0], row[1], row[2]))
                pairs.add(pair)
    return kept

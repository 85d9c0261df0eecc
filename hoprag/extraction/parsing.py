"""Defensive parsers for OpenIE and NER outputs.

LLM outputs are untrusted. Every triple that is dropped is counted under a reason, and triples
whose shape is recoverable are repaired first (counted separately): the embedded 270M model often
splits the relation over several parts, e.g. ``(Juno Halleck | studied | at | Carrow College)``,
or merges relation and object, e.g. ``(Ithva Ulmar | native of Quifen)``. A parse never raises.

JSON answers that do not parse as they are (cut off at the token budget mid-row, a trailing
comma, single quotes, a missing bracket) go through ``json-repair`` before the line parser: the
complete rows of a cut-off answer are kept (its last, partial row falls to the usual part checks),
and the result says the output was repaired (``OpenIEResult.output_repaired``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import json_repair

from hoprag.text import normalize_entity

Triple = tuple[str, str, str]

MAX_ENTITY_CHARS = 96
MAX_ENTITY_WORDS = 12
MAX_RELATION_CHARS = 96

DocumentStatus = Literal["ok", "no_triples", "unparseable", "empty_output", "llm_error", "empty_document"]

_PAREN_GROUP = re.compile(r"\(([^()]*)\)")
_QUOTES = "\"'`“”‘’"


@dataclass
class OpenIEResult:
    """What one LLM answer yielded for one passage."""

    triples: list[Triple] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    clean: int = 0
    """Triples that parsed with exactly three grounded parts."""
    repaired: int = 0
    """Triples recovered from a 2- or 4+-part tuple."""
    dropped: Counter[str] = field(default_factory=Counter)
    """Dropped triples by reason (``two_parts``, ``ungrounded``, ``overlong``, ...)."""
    status: DocumentStatus = "ok"
    output_repaired: bool = False
    """The answer was JSON only after ``json-repair`` (cut off, trailing comma, single quotes, ...)."""


def _clean_part(part: str) -> str:
    return part.strip().strip(_QUOTES).strip().rstrip(".,;:").strip()


def _grounded(span: str, norm_passage: str) -> bool:
    norm = normalize_entity(span)
    return bool(norm) and f" {norm} " in f" {norm_passage} "


def _entity_like(span: str) -> bool:
    first = span.lstrip(_QUOTES)[:1]
    return bool(first) and (first.isupper() or first.isdigit())


def _names_something(span: str, passage: str) -> bool:
    """Whether ``span``, as written in the passage, looks like a name: it starts with a capital
    letter or digit, or contains a capitalized word ("the gene CIMICK1"). Lowercase fragments such
    as "released in 1987" are not subjects, however the model cased them.
    """
    pattern = r"\s+".join(re.escape(w) for w in span.split())
    found = re.search(pattern, passage, flags=re.IGNORECASE) if pattern else None
    written = found.group(0) if found else span
    words = written.split()
    return bool(words) and (
        words[0][:1].isupper() or words[0][:1].isdigit() or any(w[:1].isupper() for w in words[1:])
    )


def _split_relation_object(middle: list[str], norm_passage: str) -> tuple[str, str] | None:
    """Join leading parts into the relation up to the first grounded, entity-like part; failing
    that, the last part is the object if it is grounded (``... | the | gene THAGAM13``)."""
    for k in range(1, len(middle)):
        tail = " ".join(middle[k:])
        if _entity_like(middle[k]) and _grounded(tail, norm_passage):
            return " ".join(middle[:k]), tail
    if len(middle) > 1 and _grounded(middle[-1], norm_passage):
        return " ".join(middle[:-1]), middle[-1]
    return None


def _split_merged(rel_obj: str, norm_passage: str) -> tuple[str, str] | None:
    """``"native of Quifen"`` → ``("native of", "Quifen")``: the longest grounded entity-like suffix."""
    words = rel_obj.split()
    for k in range(1, len(words)):
        tail = " ".join(words[k:])
        if _entity_like(words[k]) and _grounded(tail, norm_passage):
            return " ".join(words[:k]), tail
    return None


def _check_triple(triple: Triple, norm_passage: str, passage: str) -> str | None:
    """The drop reason for a 3-part triple, or ``None`` if it is acceptable."""
    s, r, o = triple
    if not s or not r or not o:
        return "empty_part"
    if (
        len(s) > MAX_ENTITY_CHARS
        or len(o) > MAX_ENTITY_CHARS
        or len(r) > MAX_RELATION_CHARS
        or len(s.split()) > MAX_ENTITY_WORDS
        or len(o.split()) > MAX_ENTITY_WORDS
    ):
        return "overlong"
    if not (_grounded(s, norm_passage) and _grounded(o, norm_passage)):
        return "ungrounded"
    if not _names_something(s, passage):
        # "(born in 1934 | studied at | X)": a lowercase phrase is a fragment, not a subject.
        return "subject_not_entity"
    if normalize_entity(s) == normalize_entity(o):
        return "self_loop"
    return None


def _candidate_tuples(text: str, output_format: str) -> tuple[list[list[str]] | None, bool]:
    """Raw part lists from the output (``None`` when nothing triple-shaped is in it), and whether
    the JSON had to be repaired to read them: valid JSON first, then the line format, then JSON
    repaired (so an answer whose JSON is hopeless but whose lines hold triples keeps them)."""
    if output_format == "json":
        parsed, _ = _json_triples(text, repair=False)
        if parsed is not None:
            return parsed, False
    tuples: list[list[str]] = []
    for line in text.splitlines():
        groups = _PAREN_GROUP.findall(line)
        if groups:
            tuples.extend(g.split("|") for g in groups if "|" in g or "," in g)
        elif line.count("|") >= 1:
            tuples.append(line.strip().strip("()").split("|"))
    if tuples:
        return tuples, False
    if output_format == "json":
        return _json_triples(text, repair=True)
    return None, False


def _json_value(text: str, opener: str, closer: str, repair: bool = True) -> tuple[object, bool]:
    """The JSON value that starts at the first ``opener`` of ``text``: parsed as it is when the
    span up to the last ``closer`` is valid JSON, else repaired (``json-repair``) from the opener
    to the end (which keeps the complete rows of an answer cut off mid-row). ``(None, False)``
    when there is no opener or nothing usable."""
    start = text.find(opener)
    if start < 0:
        return None, False
    end = text.rfind(closer)
    if end > start:
        try:
            return json.loads(text[start : end + 1]), False
        except ValueError:
            pass
    if not repair:
        return None, False
    try:
        value = json_repair.loads(text[start:])
    except (ValueError, RecursionError):
        return None, False
    return (value, True) if isinstance(value, dict | list) and value else (None, False)


def _json_triples(text: str, repair: bool) -> tuple[list[list[str]] | None, bool]:
    for opener, closer in (("{", "}"), ("[", "]")):
        obj, repaired = _json_value(text, opener, closer, repair)
        if isinstance(obj, dict) and "triples" not in obj:
            # An object cut off before its "triples" (a long "named_entities" list first): no rows.
            # Reading on to the next "[" would take that entity list for the triples.
            return ([], repaired) if "named_entities" in obj else (None, False)
        rows = obj.get("triples") if isinstance(obj, dict) else obj
        if isinstance(rows, list):
            return [[str(p) for p in row] if isinstance(row, list) else [str(row)] for row in rows], repaired
    return None, False


def parse_openie_output(text: str, passage: str, output_format: str = "lines") -> OpenIEResult:
    """Parse an OpenIE answer for ``passage`` into grounded, de-duplicated triples."""
    result = OpenIEResult()
    if not text.strip():
        result.status = "empty_output"
        return result
    tuples, result.output_repaired = _candidate_tuples(text, output_format)
    if tuples is None:
        result.status = "unparseable"
        return result
    norm_passage = normalize_entity(passage)
    seen: set[tuple[str, str, str]] = set()
    for raw_parts in tuples:
        parts = [_clean_part(p) for p in raw_parts]
        parts = [p for p in parts if p] if len(parts) != 3 else parts
        repaired = False
        if len(parts) == 3:
            triple: Triple = (parts[0], parts[1], parts[2])
        elif len(parts) == 2:
            split = _split_merged(parts[1], norm_passage)
            if split is None:
                result.dropped["two_parts"] += 1
                continue
            triple, repaired = (parts[0], split[0], split[1]), True
        elif len(parts) > 3:
            split = _split_relation_object(parts[1:], norm_passage)
            if split is None:
                result.dropped["too_many_parts"] += 1
                continue
            triple, repaired = (parts[0], split[0], split[1]), True
        else:
            result.dropped["too_few_parts"] += 1
            continue
        reason = _check_triple(triple, norm_passage, passage)
        if reason is not None:
            result.dropped[reason] += 1
            continue
        key = (normalize_entity(triple[0]), triple[1].strip().lower(), normalize_entity(triple[2]))
        if key in seen:
            result.dropped["duplicate"] += 1
            continue
        seen.add(key)
        result.triples.append(triple)
        if repaired:
            result.repaired += 1
        else:
            result.clean += 1
    entities: dict[str, str] = {}
    for s, _, o in result.triples:
        for e in (s, o):
            entities.setdefault(normalize_entity(e), e)
    result.entities = list(entities.values())
    if not result.triples:
        result.status = "no_triples"
    return result


def parse_entity_list(text: str, source: str, output_format: str = "lines") -> tuple[list[str], Counter[str]]:
    """Parse an NER answer; keep only mentions grounded in ``source`` (the question or passage).

    Returns the grounded mentions (first spelling of each normalized form) and drop counts.
    """
    dropped: Counter[str] = Counter()
    items: list[str] = []
    if output_format == "json":
        obj, _ = _json_value(text, "{", "}")
        if isinstance(obj, dict) and isinstance(obj.get("named_entities"), list):
            items = [str(x) for x in obj["named_entities"]]
    if not items:
        first_line = text.strip().splitlines()[0] if text.strip() else ""
        items = re.split(r"[;|]|, (?=[A-Z0-9])", first_line)
    norm_source = normalize_entity(source)
    kept: dict[str, str] = {}
    for item in items:
        mention = _clean_part(item)
        if not mention:
            continue
        if len(mention) > MAX_ENTITY_CHARS:
            dropped["overlong"] += 1
        elif not _grounded(mention, norm_source):
            dropped["ungrounded"] += 1
        else:
            kept.setdefault(normalize_entity(mention), mention)
    return list(kept.values()), dropped

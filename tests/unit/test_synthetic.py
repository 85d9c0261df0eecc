"""Tests of the synthetic multi-hop QA benchmark generator (pure Python, fast)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from synthetic import (
    DEFAULT_DOMAINS,
    DOMAINS,
    QUESTION_TYPES,
    SAMPLE_CONFIG,
    SAMPLE_DIR,
    PhrasingConfig,
    SyntheticBenchmark,
    SyntheticConfig,
    generate,
    minimum_documents,
    write_benchmark,
)
from synthetic.documents import FRAMES
from synthetic.fillers import FILLERS, INTRO_TYPE_WORDS, INTROS, MASS_SENTENCES
from synthetic.phrasing import (
    PHRASE_KINDS,
    PHRASES,
    STANDALONE_KINDS,
    TEMPLATES,
    VP,
    held_out_template_ids,
    plural_verb_ok,
)
from synthetic.relation_texts import _RELATIONS
from synthetic.schema import _PERSON_TYPES
from synthetic.spelling import EXACT, SPELLING_KINDS, NameMatcher, spelling_variants

RAW_FILES = ("dataset_corpus.json", "train.json", "test.json", "world.json", "facts.json")
QUESTION_KEYS = {
    "id",
    "question",
    "answer",
    "answer_aliases",
    "supporting_facts",
    "type",
    "hops",
    "domain",
    "supporting_entities",
    "spelling",
    "plan",
}
YEAR_CMP = re.compile(r"\b(earlier|first|later|more recently)(?=[,:?])")


@pytest.fixture(scope="module")
def bench() -> SyntheticBenchmark:
    return generate(
        SyntheticConfig(seed=3, num_documents=3000, num_train_questions=400, num_test_questions=200)
    )


@pytest.fixture(scope="module")
def every_domain_bench() -> SyntheticBenchmark:
    """The opt-in domains (music, sports) too."""
    return generate(
        SyntheticConfig(
            seed=3, num_documents=4500, num_train_questions=500, num_test_questions=250, domains=list(DOMAINS)
        )
    )


def _questions(b: SyntheticBenchmark) -> list[dict[str, Any]]:
    return b.train + b.test


class _Index:
    """World lookups used to re-check every question independently of the generator's own bookkeeping."""

    def __init__(self, b: SyntheticBenchmark) -> None:
        self.out: Counter[tuple[str, str]] = Counter((s, r) for s, r, _ in b.facts)
        self.inn: Counter[tuple[str, str]] = Counter((r, o) for _, r, o in b.facts)
        self.facts = set(b.facts)
        self.attrs = {(e.name, k, str(v)) for e in b.entities for k, v in e.attributes.items()}
        self.entity = {e.name: e for e in b.entities}


def test_deterministic_and_seed_sensitive(tmp_path: Path) -> None:
    cfg = SyntheticConfig(seed=11, num_documents=400, num_train_questions=40, num_test_questions=20)
    a = write_benchmark(cfg, tmp_path / "a")
    b = write_benchmark(cfg, tmp_path / "b")
    assert (a.corpus, a.train, a.test) == (b.corpus, b.train, b.test)
    for name in RAW_FILES:
        assert (tmp_path / "a" / "raw" / name).read_bytes() == (tmp_path / "b" / "raw" / name).read_bytes()
    other = generate(cfg.model_copy(update={"seed": 12}))
    assert other.corpus != a.corpus
    assert [q["question"] for q in other.train] != [q["question"] for q in a.train]


def test_domain_order_does_not_matter() -> None:
    a = SyntheticConfig(domains=["film", "biomedical"], num_documents=200)
    b = SyntheticConfig(domains=["biomedical", "film"], num_documents=200)
    assert a == b
    assert generate(a).train == generate(b).train


def test_names_and_titles_unique(bench: SyntheticBenchmark) -> None:
    names = [e.name for e in bench.entities]
    assert len(names) == len(set(names)) == len({n.casefold() for n in names})
    assert list(bench.corpus) == names
    ids = [q["id"] for q in _questions(bench)]
    assert len(ids) == len(set(ids))
    texts = [q["question"] for q in _questions(bench)]
    assert len(texts) == len(set(texts))


def test_documents_short_and_state_their_facts(bench: SyntheticBenchmark) -> None:
    lengths: Counter[int] = Counter()
    for title, text in bench.corpus.items():
        sentences = [s for s in re.split(r"(?<=\.) ", text) if s]
        assert 2 <= len(sentences) <= 8, (title, text)
        assert len(text.split()) <= 90, (title, text)
        assert text.startswith(title) or title in sentences[0], (title, text)  # the intro names it
        lengths[len(sentences)] += 1
    assert lengths[2] < len(bench.corpus) / 2  # paragraphs, mostly of 3 sentences or more
    for s, _, o in bench.facts:
        assert o in bench.corpus[s], (s, o)


@pytest.fixture(
    scope="module",
    params=[
        "main",
        "sample",
        {"seed": 8, "num_documents": 1500, "min_hops": 4, "max_hops": 4, "distractor_fraction": 0.5},
        {"seed": 9, "num_documents": 600, "domains": ["biomedical"], "num_train_questions": 150},
        {"seed": 10, "num_documents": 1200, "domains": ["music", "sports"], "num_train_questions": 300},
    ],
    ids=["main", "sample", "four-hop", "biomedical", "music-sports"],
)
def any_bench(request: pytest.FixtureRequest, bench: SyntheticBenchmark) -> SyntheticBenchmark:
    if request.param == "main":
        return bench
    if request.param == "sample":
        return generate(SAMPLE_CONFIG)
    return generate(SyntheticConfig(**request.param))


def test_answerability_invariant(any_bench: SyntheticBenchmark) -> None:
    bench = any_bench
    idx = _Index(bench)
    cfg = bench.config
    for q in _questions(bench):
        assert set(q) == QUESTION_KEYS
        docs = q["supporting_facts"]
        assert len(docs) == len(set(docs)) == q["hops"]
        assert cfg.min_hops <= q["hops"] <= cfg.max_hops
        assert all(not idx.entity[d].distractor for d in docs), q
        texts = [bench.corpus[d] for d in docs]
        joined = " ".join(texts)
        if q["answer"] not in ("yes", "no"):
            assert q["answer"] in joined, q
        for name in q["supporting_entities"]:
            assert name in joined, (name, q)
            assert not idx.entity[name].distractor, (name, q)
        triples = bench.reasoning[q["id"]]
        assert triples
        for s, r, o in triples:
            assert (s, r, o) in idx.facts or (s, r, o) in idx.attrs, (s, r, o)
            # Each hop is stated in a single supporting document.
            assert any(s in t and o in t for t in texts), ((s, r, o), q)
        if q["type"] == "comparison":
            _check_comparison(q, triples, idx)
        else:
            _check_chain(q, triples, idx)


def _check_chain(q: dict[str, Any], triples: list[tuple[str, str, str]], idx: _Index) -> None:
    cur = q["supporting_entities"][0]
    first_inverse = None
    for k, (s, r, o) in enumerate(triples):
        if (s, r, o) in idx.attrs:
            assert k == len(triples) - 1 and s == cur and o == q["answer"], q
            return
        if s == cur:
            assert idx.out[(s, r)] == 1, ("forward step not unique", s, r, q)
            cur = o
            inverse = False
        else:
            assert o == cur, q
            assert idx.inn[(r, o)] == 1, ("inverse step not unique", r, o, q)
            cur = s
            inverse = True
        if first_inverse is None:
            first_inverse = inverse
    assert cur == q["answer"], q
    assert cur == q["supporting_entities"][-1]
    assert first_inverse == (q["type"] == "compositional"), q


def _check_comparison(q: dict[str, Any], triples: list[tuple[str, str, str]], idx: _Index) -> None:
    # Reasoning order: the one-hop "via" triples first, then the two compared triples.
    via, compared = triples[:-2], triples[-2:]
    for s, r, _ in via:
        assert idx.out[(s, r)] == 1, q
    (a, rel_a, va), (b, rel_b, vb) = compared
    assert rel_a == rel_b and a != b, q
    if q["answer"] in ("yes", "no"):
        assert (va == vb) == (q["answer"] == "yes"), q
        return
    assert va != vb, q
    match = YEAR_CMP.search(q["question"])
    assert match, q
    earlier = match.group(1) in ("earlier", "first")
    winner = a if (int(va) < int(vb)) == earlier else b
    allowed = {winner} | {s for s, _, o in via if o == winner}
    assert q["answer"] in allowed, q


_PLACEHOLDER = re.compile(r"\[[^\]]+\]")


def test_gold_plans_follow_the_reasoning_chain(any_bench: SyntheticBenchmark) -> None:
    """Every question carries a gold plan: one one-hop step per reasoning triple, each answered by
    that triple's other side; a later step names an earlier answer only by that step's ``ref``; the
    first steps name the question's topic as the question spells it."""
    for q in _questions(any_bench):
        plan = q["plan"]
        triples = any_bench.reasoning[q["id"]]
        assert len(plan) == len(triples), q
        refs: dict[str, str] = {}
        for k, (step, triple) in enumerate(zip(plan, triples, strict=True)):
            assert step["step"].endswith("?") and step["answer"] in triple, (q, step, triple)
            for placeholder in _PLACEHOLDER.findall(step["step"]):
                assert placeholder in refs, (q, k, placeholder)
                assert refs[placeholder] in triple, (q, k)  # the earlier answer is this hop's subject
            if step["ref"] is not None:
                assert _PLACEHOLDER.fullmatch(step["ref"]), step
                refs[step["ref"]] = step["answer"]
        if q["type"] != "comparison":
            assert plan[-1]["answer"] == q["answer"] and plan[-1]["ref"] is None, q
            assert [p["answer"] for p in plan][: len(q["supporting_entities"]) - 1] == q[
                "supporting_entities"
            ][1:], q
        assert not _PLACEHOLDER.search(plan[0]["step"]), q
        lowered = q["question"].lower()
        topic_step = plan[0]["step"].lower()
        assert any(
            word in lowered for word in re.findall(r"[a-z0-9]{4,}", topic_step) if word not in _STEP_WORDS
        ), q


# words of step templates, so the check above looks for a name the question shares with its first step
_STEP_WORDS = {"what", "which", "when", "where", "year", "does", "founded", "born"}


def test_year_comparisons_through_two_hops_name_each_sides_hop(bench: SyntheticBenchmark) -> None:
    """ "The director of which film was born earlier, A or B?" names one role for both sides, so it is
    asked only when both sides take that hop; otherwise each side is described by its own hop and
    the answer is the compared entity. (The role template was once used for mixed hops too, asking
    about a role that one side's gold answer never took.)"""
    same = mixed = 0
    for q in _questions(bench):
        triples = bench.reasoning[q["id"]]
        if not (q["type"] == "comparison" and q["hops"] == 4 and triples[2][1].endswith("_year")):
            continue
        (start_a, hop_a, target_a), (start_b, hop_b, target_b) = triples[0], triples[1]
        if hop_a == hop_b:
            assert q["answer"] in (start_a, start_b), q
            same += 1
            continue
        assert q["answer"] in (target_a, target_b), q
        text = q["question"].lower()
        for start, hop in ((start_a, hop_a), (start_b, hop_b)):
            if start.lower() not in text:
                continue  # a respelled topic (the spelling tests cover it)
            described = (t.format(x=start).lower() for t in _RELATIONS[hop].fwd_np)
            assert any(d in text or d.removeprefix("the ") in text for d in described), (q, hop)
        mixed += 1
    assert same >= 5 and mixed >= 5, (same, mixed)


def test_types_hops_and_domains_cover_the_config(
    bench: SyntheticBenchmark, every_domain_bench: SyntheticBenchmark
) -> None:
    for b, domains in ((bench, DEFAULT_DOMAINS), (every_domain_bench, DOMAINS)):
        for split in (b.train, b.test):
            assert {q["type"] for q in split} == set(QUESTION_TYPES)
            assert {q["domain"] for q in split} == set(domains)
            assert {q["hops"] for q in split} == {2, 3, 4}
        answers = Counter(q["answer"] for q in _questions(b) if q["answer"] in ("yes", "no"))
        assert answers["yes"] > 0 and answers["no"] > 0
    assert len(bench.train) == 400 and len(bench.test) == 200


def test_music_and_sports_are_opt_in() -> None:
    """The default domains stay the first three: benchmarks generated with the defaults (the demo's,
    the shipped GLM's) do not change because domains were added."""
    assert SyntheticConfig().domains == list(DEFAULT_DOMAINS) == ["biomedical", "business", "film"]
    assert {"music", "sports"} == set(DOMAINS) - set(DEFAULT_DOMAINS)
    b = generate(
        SyntheticConfig(seed=6, num_documents=900, domains=["music", "sports"], num_test_questions=40)
    )
    assert {e.domain for e in b.entities} == {"music", "sports", "general"}
    relations = {r for _, r, _ in b.facts}
    music_sports = {"member_of", "recorded_by", "produced_by", "signed_to", "formed_in"}
    music_sports |= {"plays_for", "coached_by", "home_ground", "stadium_in"}
    assert music_sports <= relations


def test_hop_bounds_respected() -> None:
    for lo, hi in ((2, 2), (3, 3), (4, 4), (3, 4)):
        cfg = SyntheticConfig(
            seed=5, num_documents=800, num_train_questions=60, num_test_questions=0, min_hops=lo, max_hops=hi
        )
        b = generate(cfg)
        assert {q["hops"] for q in b.train} <= set(range(lo, hi + 1))
        assert {q["type"] for q in b.train} == set(QUESTION_TYPES)


def test_held_out_domains_only_in_test() -> None:
    cfg = SyntheticConfig(
        seed=2,
        num_documents=1500,
        num_train_questions=150,
        num_test_questions=90,
        held_out_domains=["biomedical"],
    )
    b = generate(cfg)
    entity_domain = {e.name: e.domain for e in b.entities}
    assert all(q["domain"] != "biomedical" for q in b.train)
    assert all(entity_domain[n] != "biomedical" for q in b.train for n in q["supporting_entities"])
    assert any(q["domain"] == "biomedical" for q in b.test)
    assert {q["domain"] for q in b.train} == {"business", "film"}


def test_single_domain_and_no_distractors() -> None:
    b = generate(SyntheticConfig(seed=4, num_documents=500, domains=["film"], distractor_fraction=0.0))
    assert {e.domain for e in b.entities} == {"film", "general"}
    assert not any(e.distractor for e in b.entities)
    assert {q["domain"] for q in b.train + b.test} == {"film"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"domains": ["cooking"]},
        {"domains": []},
        {"domains": ["film", "film"]},
        {"held_out_domains": ["cooking"]},
        {"domains": ["film", "business"], "held_out_domains": ["biomedical"]},
        {"domains": ["film"], "held_out_domains": ["film"]},
        {"num_documents": 0},
        {"num_documents": -5},
        {"num_documents": 10},
        {"num_train_questions": -1},
        {"num_test_questions": -1},
        {"distractor_fraction": -0.1},
        {"distractor_fraction": 0.95},
        {"min_hops": 1},
        {"max_hops": 5},
        {"min_hops": 4, "max_hops": 3},
        {"variant_spelling_fraction": -0.1},
        {"variant_spelling_fraction": 1.01},
        {"variant_spelling_fraction": "often"},
        {"unknown_option": 1},
    ],
)
def test_config_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SyntheticConfig(**kwargs)


def test_config_accepts_edge_values() -> None:
    SyntheticConfig(domains=["film"], held_out_domains=["film"], num_train_questions=0)
    n = minimum_documents(list(DOMAINS), 0.2)
    b = generate(SyntheticConfig(num_documents=n, num_train_questions=3, num_test_questions=3))
    assert len(b.corpus) == n


def test_too_many_questions_for_a_tiny_world() -> None:
    n = minimum_documents(["film"], 0.0)
    cfg = SyntheticConfig(
        domains=["film"], distractor_fraction=0.0, num_documents=n, num_train_questions=5000
    )
    with pytest.raises(ValueError, match="distinct questions"):
        generate(cfg)


def test_write_produces_raw_layout(tmp_path: Path) -> None:
    cfg = SyntheticConfig(seed=9, num_documents=300, num_train_questions=30, num_test_questions=10)
    out = tmp_path / "deep" / "bench"
    b = write_benchmark(cfg, out)
    raw = out / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(RAW_FILES)
    corpus = json.loads((raw / "dataset_corpus.json").read_text(encoding="utf-8"))
    assert corpus == b.corpus
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in corpus.items())
    for split, expected in (("train", b.train), ("test", b.test)):
        data = json.loads((raw / f"{split}.json").read_text(encoding="utf-8"))
        assert data == expected
        for q in data:
            assert set(q) == QUESTION_KEYS
            assert isinstance(q["answer"], str) and isinstance(q["answer_aliases"], list)
            assert all(t in corpus for t in q["supporting_facts"])
            assert q["type"] in QUESTION_TYPES and q["domain"] in DOMAINS
    world = json.loads((raw / "world.json").read_text(encoding="utf-8"))
    assert len(world["entities"]) == len(corpus)
    assert set(world["reasoning"]) == {q["id"] for q in b.train + b.test}


def test_scaling_smoke() -> None:
    cfg = SyntheticConfig(seed=1, num_documents=20_000, num_train_questions=1000, num_test_questions=500)
    b = generate(cfg)
    assert len(b.corpus) == 20_000
    assert len(b.train) == 1000 and len(b.test) == 500
    assert sum(e.distractor for e in b.entities) == round(20_000 * 0.2)
    supporting = {t for q in b.train + b.test for t in q["supporting_facts"]}
    distractors = {e.name for e in b.entities if e.distractor}
    assert not supporting & distractors


def test_shipped_sample_is_reproducible(tmp_path: Path) -> None:
    expected = SyntheticConfig(seed=7, num_documents=60, num_train_questions=60, num_test_questions=20)
    assert expected == SAMPLE_CONFIG
    write_benchmark(SAMPLE_CONFIG, tmp_path)
    for name in RAW_FILES:
        shipped = SAMPLE_DIR / "raw" / name
        assert shipped.is_file(), (
            f"missing {shipped}; regenerate it as described in {SAMPLE_DIR / 'README.md'}"
        )
        assert (tmp_path / "raw" / name).read_bytes() == shipped.read_bytes(), (
            f"{name} differs from the shipped sample"
        )


# -- variant spellings of the topic entity ---------------------------------------------------------

MAIN_CONFIG = {"seed": 3, "num_documents": 3000, "num_train_questions": 400, "num_test_questions": 200}
_PUNCT = re.compile(r"[\s.'’-]")


def _topic_mention(original: str, variant: str, name: str) -> str:
    """The text that replaced ``name`` in ``original`` to give ``variant`` (all else unchanged)."""
    for m in re.finditer(re.escape(name), original):
        before, after = original[: m.start()], original[m.end() :]
        if (
            variant.startswith(before)
            and variant.endswith(after)
            and len(variant) >= len(before) + len(after)
        ):
            return variant[len(before) : len(variant) - len(after)]
    raise AssertionError(f"{variant!r} is not {original!r} with {name!r} respelled")


def _strip_the(text: str) -> str:
    return text[4:] if text.casefold().startswith("the ") else text


def _is_spelling_of(kind: str, mention: str, name: str) -> bool:
    """Per-kind rules, independent of the generator's code, for "``mention`` spells ``name``"."""
    if mention == name:
        return False
    if kind == "case":
        return mention.casefold() == name.casefold()
    if kind == "punctuation":  # only periods, apostrophes, hyphens and spaces differ
        return _PUNCT.sub("", mention) == _PUNCT.sub("", name) and mention.casefold() != name.casefold()
    if kind == "the_prefix":
        return _strip_the(mention) == _strip_the(name) and (mention[:4].casefold() == "the ") != (
            name[:4].casefold() == "the "
        )
    if kind == "abbreviation":
        capitals = "".join(w[0] for w in name.split() if w[:1].isupper())
        if mention.isupper() and mention.isalpha() and len(capitals) >= 3:
            return mention == capitals.upper()
        words, full = mention.split(), name.split()
        if len(words) != len(full):
            return False
        short = [w for w, f in zip(words, full, strict=True) if w != f]
        return bool(short) and all(
            w.endswith(".") and len(w) - 1 < len(f) and f.startswith(w[:-1])
            for w, f in zip(words, full, strict=True)
            if w != f
        )
    raise AssertionError(kind)


def test_variant_spelling_fraction_is_honoured(bench: SyntheticBenchmark) -> None:
    fraction = bench.config.variant_spelling_fraction
    assert fraction == 0.2  # the default
    for split in (bench.train, bench.test):
        spellings = Counter(q["spelling"] for q in split)
        assert set(spellings) <= {EXACT, *SPELLING_KINDS}
        respelled = len(split) - spellings[EXACT]
        assert abs(respelled - fraction * len(split)) <= max(2, 0.02 * len(split)), spellings
    every = Counter(q["spelling"] for q in _questions(bench))
    assert set(every) == {EXACT, *SPELLING_KINDS}, every


@pytest.mark.parametrize("fraction", [0.0, 0.5, 1.0])
def test_other_fractions(fraction: float) -> None:
    b = generate(
        SyntheticConfig(
            seed=6,
            num_documents=600,
            num_train_questions=80,
            num_test_questions=40,
            variant_spelling_fraction=fraction,
        )
    )
    for split in (b.train, b.test):
        respelled = sum(q["spelling"] != EXACT for q in split)
        assert abs(respelled - fraction * len(split)) <= 2


def test_variants_respell_only_the_topic_mention(bench: SyntheticBenchmark) -> None:
    """Against the same benchmark without variants: exact questions are identical records; a respelled
    one differs only in its question text, where the topic entity's name became a mention that
    spells the same entity by the rules of its kind and names no other entity of the world."""
    plain = generate(SyntheticConfig(**MAIN_CONFIG, variant_spelling_fraction=0.0))
    assert plain.corpus == bench.corpus and plain.reasoning == bench.reasoning
    assert plain.entities == bench.entities and plain.facts == bench.facts
    matcher = NameMatcher(e.name for e in bench.entities)
    examples: dict[str, set[str]] = {}
    for q, p in zip(_questions(bench), _questions(plain), strict=True):
        assert p["spelling"] == EXACT
        if q["spelling"] == EXACT:
            assert q == p
            continue
        assert {k: v for k, v in q.items() if k not in ("question", "spelling", "plan")} == {
            k: v for k, v in p.items() if k not in ("question", "spelling", "plan")
        }
        topic = q["supporting_entities"][0]
        mention = _topic_mention(p["question"], q["question"], topic)
        # the gold plan names the topic as the question does
        respelled = json.loads(
            json.dumps(p["plan"]).replace(json.dumps(topic)[1:-1], json.dumps(mention)[1:-1])
        )
        assert [(s["step"].lower(), s["ref"]) for s in q["plan"]] == [
            (s["step"].lower(), s["ref"]) for s in respelled
        ]
        assert _is_spelling_of(q["spelling"], mention, topic), (q["spelling"], mention, topic)
        assert matcher.resolve(mention) == {topic}, (mention, topic)
        examples.setdefault(q["spelling"], set()).add(mention)
    assert set(examples) == set(SPELLING_KINDS)


def test_variant_spelling_is_deterministic_and_seeded() -> None:
    cfg = SyntheticConfig(seed=21, num_documents=500, num_train_questions=60, num_test_questions=30)
    a, b = generate(cfg), generate(cfg)
    assert (a.train, a.test) == (b.train, b.test)
    chosen = [q["id"] for q in a.train + a.test if q["spelling"] != EXACT]
    assert chosen
    other = generate(cfg.model_copy(update={"seed": 22}))
    assert [q["id"] for q in other.train + other.test if q["spelling"] != EXACT] != chosen


@pytest.mark.parametrize(
    ("name", "etype", "kind", "expected"),
    [
        ("Brado Tranford", "film_person", "case", "brado tranford"),
        ("Brado Tranford", "film_person", "case", "BRADO TRANFORD"),
        ("Katham syndrome", "disease", "case", "Katham Syndrome"),
        ("KLARN5", "gene", "case", "Klarn5"),
        ("Jean-Luc Picard", "film_person", "punctuation", "Jean Luc Picard"),
        ("St. Mary", "city", "punctuation", "St Mary"),
        ("Brado's Ledger", "film", "punctuation", "Brados Ledger"),
        ("KLARN5", "gene", "punctuation", "KLARN-5"),
        ("Vamo 500", "product", "punctuation", "Vamo-500"),
        ("Brado Tranford", "business_person", "punctuation", "Brado-Tranford"),
        ("John Ronald Smith", "film_person", "abbreviation", "J. R. Smith"),
        ("Bradia ensis", "organism", "abbreviation", "B. ensis"),
        ("Orvale Institute of Technology", "university", "abbreviation", "OIT"),
        ("Orvale Institute of Technology", "university", "abbreviation", "Orvale Inst. of Tech."),
        ("Brado Technologies", "company", "abbreviation", "Brado Tech."),
        ("The Silent Ledger", "film", "the_prefix", "Silent Ledger"),
        ("Orvale Institute", "company", "the_prefix", "the Orvale Institute"),
    ],
)
def test_spelling_variants_of_one_name(name: str, etype: str, kind: str, expected: str) -> None:
    variants = spelling_variants(name, etype)
    assert expected in variants[kind]
    assert all(v != name for vs in variants.values() for v in vs)
    assert all(_is_spelling_of(k, v, name) for k, vs in variants.items() for v in vs), variants
    assert NameMatcher([name, "Somebody Else"]).resolve(expected) == {name}


def test_kinds_apply_only_where_they_change_the_name() -> None:
    assert set(spelling_variants("Clijolol", "drug")) == {"case"}  # one word: nothing but case
    assert "the_prefix" not in spelling_variants("Brado Tranford", "film_person")  # no "the" for people
    assert "abbreviation" not in spelling_variants("Brado Motors", "company")  # no standard short form
    assert spelling_variants("brado", "drug") == {"case": ["BRADO", "Brado"]}


def test_matcher_keeps_abbreviations_apart() -> None:
    m = NameMatcher(["Brado Tranford", "Bora Tranford", "Brado Systems", "Bradomir Systems", "Tranford"])
    assert m.resolve("B. Tranford") == {"Brado Tranford", "Bora Tranford"}  # ambiguous, so never generated
    assert m.resolve("Brado Systems") == {"Brado Systems"}  # no dot: not an abbreviation of "Bradomir"
    assert m.resolve("the brado-systems") == {"Brado Systems"}
    assert m.resolve("Tranford") == {"Tranford"}
    assert m.resolve("Systems") == set()
    text = "Did B. Tranford work for the Brado Tech. office in Tranford?"
    spans = [(text[s:e], names) for s, e, names in NameMatcher(["Brado Technologies", "Tranford"]).find(text)]
    # Longest first, then left to right; the city inside "B. Tranford" is found, the person is not in it.
    assert spans == [
        ("Brado Tech.", {"Brado Technologies"}),
        ("Tranford", {"Tranford"}),
        ("Tranford", {"Tranford"}),
    ]


def test_spelling_metadata_reaches_the_indexed_questions(tmp_path: Path) -> None:
    from indexing.corpus import read_corpus

    b = write_benchmark(
        SyntheticConfig(seed=9, num_documents=300, num_train_questions=30, num_test_questions=10), tmp_path
    )
    corpus = read_corpus(tmp_path)
    for split, records in (("train", b.train), ("test", b.test)):
        metadata = [q["metadata"] for q in corpus.questions[split]]
        assert [m["spelling"] for m in metadata] == [q["spelling"] for q in records]
        assert all({"type", "hops", "domain"} <= set(m) for m in metadata)


def test_cli_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hoprag_cli import main

    args = [
        "generate",
        "--out",
        str(tmp_path),
        "--num-documents",
        "300",
        "--train-questions",
        "20",
        "--test-questions",
        "10",
    ]
    assert main([*args, "--variant-spelling-fraction", "0.5"]) == 0
    train = json.loads((tmp_path / "raw" / "train.json").read_text(encoding="utf-8"))
    assert sum(q["spelling"] != EXACT for q in train) == 10
    world = json.loads((tmp_path / "raw" / "world.json").read_text(encoding="utf-8"))
    assert world["config"]["variant_spelling_fraction"] == 0.5
    assert main([*args, "--variant-spelling-fraction", "2"]) == 2
    assert "variant_spelling_fraction" in capsys.readouterr().err
    assert main(args) == 0
    world = json.loads((tmp_path / "raw" / "world.json").read_text(encoding="utf-8"))
    assert world["config"]["variant_spelling_fraction"] == 0.2


def test_spelling_is_an_eval_report_breakdown() -> None:
    from evaluation.report import BREAKDOWN_KEYS, _breakdown

    records = [
        {"metrics": {"recall@5": 1.0}, "meta": {"spelling": "exact"}},
        {"metrics": {"recall@5": 0.5}, "meta": {"spelling": "exact"}},
        {"metrics": {"recall@5": 0.0}, "meta": {"spelling": "abbreviation"}},
    ]
    assert "spelling" in BREAKDOWN_KEYS
    assert _breakdown(records, "spelling", "recall@5") == {"exact": 0.75, "abbreviation": 0.0}


# -- phrasing: templates, pronouns, two-fact and filler sentences, held-out templates, facts.json ------

FACT_KEYS = {"head", "relation", "tail", "template", "domain", "type", "frame", "pronoun", "sentence"}
_PRONOUN_WORD = re.compile(r"(?<!\w)(he|she|it|they)(?!\w)", re.IGNORECASE)
_PERSON_RELATIONS = ("born_in", "educated_at", "married_to", "member_of", "plays_for")


def _relation_facts(b: SyntheticBenchmark) -> list[tuple[str, dict[str, Any]]]:
    return [(t, f) for t, fs in b.document_facts.items() for f in fs if f["type"] == "relation"]


def test_every_relation_has_several_templates_of_varied_syntax() -> None:
    assert set(PHRASES) == set(_RELATIONS)
    for rel, phrases in PHRASES.items():
        assert len(phrases) >= 3, rel
        kinds = {p.kind for p in phrases}
        assert len(kinds) >= 3 and kinds & STANDALONE_KINDS, (rel, kinds)
        for k, p in enumerate(phrases):
            assert TEMPLATES[f"{rel}/{k}"] == (rel, p)
            assert "{o}" in p.text, (rel, p)
            assert ("{s}" in p.text) == (p.kind == "clause"), (rel, p)  # only clauses place the subject
    kinds_used = {p.kind for ps in PHRASES.values() for p in ps}
    assert kinds_used == set(PHRASE_KINDS)


def test_templates_leave_pronouns_to_the_entities_and_agree_with_they() -> None:
    """No template, intro or filler contains he/she/it/they (so every pronoun in a document stands for
    an entity); verb phrases said of people agree with singular 'they'; fillers name nothing."""
    texts = [p.text for ps in PHRASES.values() for p in ps]
    texts += [t for ts in INTROS.values() for t in ts] + list(MASS_SENTENCES)
    texts += [t for ts in FILLERS.values() for t in ts]
    for text in texts:
        assert not _PRONOUN_WORD.search(text), text
    for rel in _PERSON_RELATIONS:
        for p in PHRASES[rel]:
            if p.kind == VP:
                assert plural_verb_ok(p.text), (rel, p.text)
    kinds = {k.split(" ", 1)[1].lower() for k in _all_kinds()}
    for etype, fillers in FILLERS.items():
        assert len(fillers) >= 6, etype
        for text in fillers:
            if etype in _PERSON_TYPES:
                assert plural_verb_ok(text), text
            assert text == text.lower() and not re.search(r"\d", text), text
            assert not any(k in text for k in kinds), text


def _all_kinds() -> list[str]:
    from synthetic import names

    return [
        *(o for o, _ in names._FILM_OCCUPATIONS),
        *names._BUSINESS_OCCUPATIONS,
        *(k for k, _ in names._INDUSTRIES),
        *names._PRODUCT_KINDS,
        *(k for _, k in names._DRUG_CLASSES),
        *names._ORGANISM_KINDS,
        *(o for o, _ in names._MUSIC_OCCUPATIONS),
        *names._ALBUM_KINDS,
        *names._ATHLETE_POSITIONS,
    ]


def test_a_corpus_uses_every_template_and_frame(every_domain_bench: SyntheticBenchmark) -> None:
    bench = every_domain_bench
    facts = _relation_facts(bench)
    used = Counter(f["template"] for _, f in facts)
    assert set(used) == set(TEMPLATES), sorted(set(TEMPLATES) - set(used))
    frames = Counter(f["frame"] for _, f in facts)
    assert set(frames) == set(FRAMES), frames
    assert frames["conjunction"] > 20 and frames["relative_clause"] > 20, frames
    pronouns = Counter(f["pronoun"] for _, f in facts if f["pronoun"])
    assert set(pronouns) == {"he", "she", "it", "they"}, pronouns
    # Two facts in one sentence: conjunctions, relative clauses and modifiers hosted by another fact.
    per_sentence = Counter((t, f["sentence"]) for t, f in facts)
    assert sum(n == 2 for n in per_sentence.values()) > 200
    # Filler sentences: sentences of a document that state nothing.
    fillers = 0
    for title, text in bench.corpus.items():
        stating = {f["sentence"] for f in bench.document_facts[title]}
        fillers += sum(s not in stating for s in re.split(r"(?<=\.) ", text))
    assert fillers > 0.3 * len(bench.corpus)


def _check_facts_json(b: SyntheticBenchmark) -> None:
    """Every stated fact is a world fact or attribute, stated in its sentence of that document, and every
    world fact is stated where the generator promises (its subject's document; for encodes also the
    object's)."""
    world = set(b.facts)
    entity = {e.name: e for e in b.entities}
    assert list(b.document_facts) == list(b.corpus)
    stated: set[tuple[str, str, str, str]] = set()
    for title, facts in b.document_facts.items():
        text = b.corpus[title]
        own = entity[title]
        for f in facts:
            assert set(f) == FACT_KEYS
            assert f["sentence"] in text, (title, f)
            assert f["domain"] == own.domain
            sentence = f["sentence"]
            if f["pronoun"]:
                assert f["pronoun"] == own.attributes["pronoun"]
                assert f["pronoun"] in {m.lower() for m in _PRONOUN_WORD.findall(sentence)}, (title, f)
            else:
                assert title in sentence, (title, f)
            if f["type"] == "attribute":
                assert f["head"] == title
                if f["relation"] == "kind" and "kind" not in own.attributes:
                    value = INTRO_TYPE_WORDS[own.type]
                else:
                    value = str(own.attributes["kind" if f["relation"] == "kind" else f["relation"]])
                assert value in f["tail"] and f["tail"] in sentence, (title, f)
                continue
            triple = (f["head"], f["relation"], f["tail"])
            assert triple in world, (title, f)
            assert TEMPLATES[f["template"]][0] == f["relation"]
            assert f["frame"] in FRAMES
            assert title in (f["head"], f["tail"]), (title, f)
            other = f["tail"] if f["head"] == title else f["head"]
            assert other in sentence, (title, f)
            stated.add((title, *triple))
    for s, r, o in world:
        assert (s, s, r, o) in stated, (s, r, o)
        if _RELATIONS[r].both_docs:
            assert (o, s, r, o) in stated, (s, r, o)


def test_facts_json_is_stated_and_consistent(any_bench: SyntheticBenchmark) -> None:
    _check_facts_json(any_bench)


def test_every_intro_states_a_kind_and_facts_json_records_it(
    every_domain_bench: SyntheticBenchmark,
) -> None:
    """An intro says what its entity is ("X is a gene", "The city of X"): with the world's kind, or for
    types the world gives none with the type word, which facts.json must then record as the ``kind``
    attribute (else a correct ``(X | is a | gene)`` scores as a wrong triple in ``bench extract``)."""
    for etype, templates in INTROS.items():
        for template in templates:
            if etype in INTRO_TYPE_WORDS:
                assert "{kind}" not in template and INTRO_TYPE_WORDS[etype] in template, (etype, template)
            else:
                assert "{kind}" in template, (etype, template)
    for entity in every_domain_bench.entities:
        kinds = [f for f in every_domain_bench.document_facts[entity.name] if f["relation"] == "kind"]
        assert len(kinds) == 1, (entity.name, kinds)
        assert kinds[0]["template"].startswith(f"intro:{entity.type}/")


def test_facts_json_written_and_indexing_ignores_it(tmp_path: Path) -> None:
    from indexing.corpus import read_corpus

    cfg = SyntheticConfig(seed=9, num_documents=300, num_train_questions=30, num_test_questions=10)
    b = write_benchmark(cfg, tmp_path)
    facts = json.loads((tmp_path / "raw" / "facts.json").read_text(encoding="utf-8"))
    assert facts == b.document_facts
    world = json.loads((tmp_path / "raw" / "world.json").read_text(encoding="utf-8"))
    assert set(world["phrasing"]["templates"]) == set(TEMPLATES)
    assert world["phrasing"]["held_out_templates"] == []
    corpus = read_corpus(tmp_path)
    assert {d.title: d.text for d in corpus.documents} == b.corpus
    assert not corpus.problems


def test_supporting_facts_are_stated_in_supporting_documents(bench: SyntheticBenchmark) -> None:
    for q in _questions(bench):
        stated = {
            (f["head"], f["relation"], f["tail"])
            for d in q["supporting_facts"]
            for f in bench.document_facts[d]
        }
        for s, r, o in bench.reasoning[q["id"]]:
            if r in _RELATIONS:
                assert (s, r, o) in stated, (q, (s, r, o))
            else:  # a year attribute
                assert (s, r, o) in stated, (q, (s, r, o))


def test_pronouns_are_unambiguous() -> None:
    """Independently of the generator's bookkeeping: before each pronoun, the document mentions no
    entity but its own that takes the same pronoun."""
    b = generate(SyntheticConfig(seed=6, num_documents=600, num_train_questions=40, num_test_questions=20))
    pronoun = {e.name: e.attributes["pronoun"] for e in b.entities}
    assert {"he", "she", "they"} <= set(pronoun.values())
    checked = 0
    for title, text in b.corpus.items():
        candidates = [n for n in pronoun if n in text and n != title]
        for sentence in dict.fromkeys(f["sentence"] for f in b.document_facts[title] if f["pronoun"]):
            m = _PRONOUN_WORD.search(sentence)
            assert m and m.group(1).lower() == pronoun[title], (title, sentence)
            before = text[: text.index(sentence) + m.start()]
            assert title in before, (title, text)
            rivals = [n for n in candidates if n in before and pronoun[n] == pronoun[title]]
            assert not rivals, (title, sentence, rivals)
            checked += 1
    assert checked > 50


def test_zero_probabilities_give_plain_documents_and_never_change_questions(
    bench: SyntheticBenchmark,
) -> None:
    plain = generate(
        SyntheticConfig(
            **MAIN_CONFIG,
            phrasing=PhrasingConfig(
                pronoun_probability=0, two_fact_probability=0, filler_sentence_probability=0
            ),
        )
    )
    assert (plain.train, plain.test, plain.reasoning) == (bench.train, bench.test, bench.reasoning)
    assert plain.entities == bench.entities and plain.facts == bench.facts
    assert plain.corpus != bench.corpus
    facts = _relation_facts(plain)
    assert not any(f["pronoun"] for _, f in facts)
    assert {f["frame"] for _, f in facts} <= {"single", "apposition", "fronted"}
    for title, text in plain.corpus.items():
        stating = {f["sentence"] for f in plain.document_facts[title]}
        assert all(s in stating for s in re.split(r"(?<=\.) ", text)), (title, text)  # no filler


def test_held_out_templates_only_on_the_test_side() -> None:
    cfg = SyntheticConfig(
        seed=2,
        num_documents=1500,
        num_train_questions=150,
        num_test_questions=90,
        held_out_domains=["biomedical"],
        phrasing=PhrasingConfig(held_out_templates=["born_in/5"], held_out_template_fraction=0.2),
    )
    b = generate(cfg)
    held = set(b.held_out_templates)
    assert "born_in/5" in held
    assert held == set(held_out_template_ids(["born_in/5"], 0.2))
    per_relation = Counter(TEMPLATES[t][0] for t in held)
    assert set(per_relation) == set(PHRASES)  # the fraction holds out at least one of each relation
    train_support = {d for q in b.train for d in q["supporting_facts"]}
    test_support = {d for q in b.test for d in q["supporting_facts"]}
    test_side = set(b.test_side_documents)
    assert test_side == test_support - train_support
    assert len(test_side) > 40
    used_test_side: set[str] = set()
    for title, f in _relation_facts(b):
        if title in test_side:
            used_test_side.add(f["template"])
            # The test side uses a held-out template whenever its relation has one it can use here.
            assert f["template"] in held or f["relation"] not in per_relation or f["head"] != title, f
        else:
            assert f["template"] not in held, (title, f)
    assert len(used_test_side & held) >= 10
    # Training-side documents: everything else, all the train questions' supporting documents included.
    assert train_support.isdisjoint(test_side)
    _check_facts_json(b)


def test_held_out_fraction_is_the_same_for_every_seed() -> None:
    a = held_out_template_ids([], 0.3)
    assert a == held_out_template_ids([], 0.3)
    b1 = generate(
        SyntheticConfig(seed=1, num_documents=300, phrasing=PhrasingConfig(held_out_template_fraction=0.3))
    )
    b2 = generate(
        SyntheticConfig(seed=2, num_documents=300, phrasing=PhrasingConfig(held_out_template_fraction=0.3))
    )
    assert b1.held_out_templates == b2.held_out_templates == a
    for rel, phrases in PHRASES.items():
        ids = [t for t in a if TEMPLATES[t][0] == rel]
        assert ids and len(ids) == min(len(phrases) - 1, max(1, round(0.3 * len(phrases)))), (rel, ids)
        assert any(f"{rel}/{k}" not in ids and p.kind in STANDALONE_KINDS for k, p in enumerate(phrases))
    assert held_out_template_ids([], 0.0) == []


def test_a_corpus_without_test_questions_never_uses_held_out_templates() -> None:
    """A training corpus for a student: the held-out templates appear nowhere."""
    b = generate(
        SyntheticConfig(
            seed=5,
            num_documents=800,
            num_test_questions=0,
            phrasing=PhrasingConfig(held_out_template_fraction=0.4),
        )
    )
    assert b.held_out_templates and not b.test_side_documents
    assert not any(f["template"] in set(b.held_out_templates) for _, f in _relation_facts(b))


@pytest.mark.parametrize(
    "phrasing",
    [
        {"pronoun_probability": -0.1},
        {"pronoun_probability": 1.5},
        {"two_fact_probability": 2},
        {"filler_sentence_probability": -1},
        {"max_filler_sentences": -1},
        {"max_filler_sentences": 9},
        {"held_out_templates": ["born_in/99"]},
        {"held_out_templates": ["nope"]},
        {"held_out_templates": ["born_in/1", "born_in/1"]},
        {"held_out_templates": ["married_to/0", "married_to/1", "married_to/2"]},  # no standalone left
        {"held_out_template_fraction": 1.0},
        {"held_out_template_fraction": -0.2},
        {"pronouns": 0.5},
    ],
)
def test_phrasing_config_validation(phrasing: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SyntheticConfig(phrasing=phrasing)


def test_cli_phrasing_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hoprag_cli import main

    args = ["generate", "--out", str(tmp_path), "--num-documents", "300", "--train-questions", "20"]
    args += ["--test-questions", "20", "--held-out-templates", "born_in/0", "city_in/1"]
    args += ["--held-out-template-fraction", "0.2", "--pronoun-probability", "0.9"]
    args += [
        "--two-fact-probability",
        "0.5",
        "--filler-sentence-probability",
        "0",
        "--max-filler-sentences",
        "1",
    ]
    assert main(args) == 0
    assert "held-out templates" in capsys.readouterr().out
    world = json.loads((tmp_path / "raw" / "world.json").read_text(encoding="utf-8"))
    phrasing = world["config"]["phrasing"]
    assert phrasing["held_out_templates"] == ["born_in/0", "city_in/1"]
    assert phrasing["pronoun_probability"] == 0.9 and phrasing["max_filler_sentences"] == 1
    assert {"born_in/0", "city_in/1"} <= set(world["phrasing"]["held_out_templates"])
    assert main([*args[:-2], "--max-filler-sentences", "7"]) == 2
    assert "max_filler_sentences" in capsys.readouterr().err

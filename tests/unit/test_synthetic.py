"""Tests of the synthetic multi-hop QA benchmark generator (pure Python, fast)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hoprag.data.synthetic import (
    DOMAINS,
    QUESTION_TYPES,
    SAMPLE_CONFIG,
    SAMPLE_DIR,
    SyntheticBenchmark,
    SyntheticConfig,
    generate,
    minimum_documents,
    write_benchmark,
)
from hoprag.data.synthetic.spelling import EXACT, SPELLING_KINDS, NameMatcher, spelling_variants

RAW_FILES = ("dataset_corpus.json", "train.json", "test.json", "world.json")
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
}
YEAR_CMP = re.compile(r"\b(earlier|first|later|more recently)(?=[,:?])")


@pytest.fixture(scope="module")
def bench() -> SyntheticBenchmark:
    return generate(
        SyntheticConfig(seed=3, num_documents=3000, num_train_questions=400, num_test_questions=200)
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
    for title, text in bench.corpus.items():
        sentences = [s for s in re.split(r"(?<=\.) ", text) if s]
        assert 2 <= len(sentences) <= 5, (title, text)
        assert len(text.split()) <= 70, (title, text)
        assert title in text
    for s, _, o in bench.facts:
        assert o in bench.corpus[s], (s, o)


@pytest.fixture(
    scope="module",
    params=[
        "main",
        "sample",
        {"seed": 8, "num_documents": 1500, "min_hops": 4, "max_hops": 4, "distractor_fraction": 0.5},
        {"seed": 9, "num_documents": 600, "domains": ["biomedical"], "num_train_questions": 150},
    ],
    ids=["main", "sample", "four-hop", "biomedical"],
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


def test_types_hops_and_domains_cover_the_config(bench: SyntheticBenchmark) -> None:
    for split in (bench.train, bench.test):
        assert {q["type"] for q in split} == set(QUESTION_TYPES)
        assert {q["domain"] for q in split} == set(DOMAINS)
        assert {q["hops"] for q in split} == {2, 3, 4}
    answers = Counter(q["answer"] for q in _questions(bench) if q["answer"] in ("yes", "no"))
    assert answers["yes"] > 0 and answers["no"] > 0
    assert len(bench.train) == 400 and len(bench.test) == 200


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
        assert {k: v for k, v in q.items() if k not in ("question", "spelling")} == {
            k: v for k, v in p.items() if k not in ("question", "spelling")
        }
        topic = q["supporting_entities"][0]
        mention = _topic_mention(p["question"], q["question"], topic)
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
    from hoprag.cli import main

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

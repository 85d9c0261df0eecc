"""World construction: entities (with their pronouns) and facts. ``documents.py`` renders them."""

from __future__ import annotations

import random
from collections.abc import Callable

from .config import DEFAULT_DOMAINS, SyntheticConfig, _num_distractors
from .names import (
    _ALBUM_KINDS,
    _ATHLETE_POSITIONS,
    _BUSINESS_OCCUPATIONS,
    _DRUG_CLASSES,
    _FILM_OCCUPATIONS,
    _INDUSTRIES,
    _MUSIC_OCCUPATIONS,
    _ORGANISM_KINDS,
    _PRODUCT_KINDS,
    _Namer,
)
from .phrasing import PERSON_PRONOUNS
from .schema import _PERSON_TYPES, _TYPES, GENERAL_DOMAIN, _active_types


def _largest_remainder(total: int, weights: dict[str, float]) -> dict[str, int]:
    wsum = sum(weights.values())
    if total <= 0 or wsum <= 0:
        return dict.fromkeys(weights, 0)
    exact = {k: total * w / wsum for k, w in weights.items()}
    counts = {k: int(v) for k, v in exact.items()}
    left = total - sum(counts.values())
    # Ties broken by the fixed type order, so the split is deterministic.
    order = sorted(weights, key=lambda k: (-(exact[k] - counts[k]), list(weights).index(k)))
    for k in order[:left]:
        counts[k] += 1
    return counts


def _type_counts(config: SyntheticConfig) -> tuple[dict[str, int], dict[str, int]]:
    types = _active_types(config.domains)
    # Places are shared by all domains, so their share follows the number of active domains (relative
    # to the default three, whose benchmarks this must not change).
    scale = len(config.domains) / len(DEFAULT_DOMAINS)
    weights = {t: _TYPES[t].weight * (scale if _TYPES[t].domain == GENERAL_DOMAIN else 1.0) for t in types}
    distractors = _num_distractors(config.num_documents, config.distractor_fraction)
    core_total = config.num_documents - distractors
    core = {t: _TYPES[t].min_core for t in types}
    extra = _largest_remainder(core_total - sum(core.values()), weights)
    core = {t: core[t] + extra[t] for t in types}
    dist = _largest_remainder(distractors, weights)
    # Every country needs a capital in its own pool (core or distractor), so never more countries than cities.
    for counts in (core, dist):
        if counts["country"] > counts["city"]:
            moved = counts["country"] - counts["city"]
            moved = (moved + 1) // 2
            counts["country"] -= moved
            counts["city"] += moved
    return core, dist


class _World:
    """Entities as parallel lists plus per-entity outgoing/incoming fact lists (ids, not names)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.types: list[str] = []
        self.core: list[bool] = []
        self.years: list[int] = []
        self.kind: list[str] = []  # occupation / industry / product kind / drug class / organism kind
        self.mass: list[int] = []
        self.pronoun: list[str] = []  # he/she/they for people, it otherwise (``_assign_pronouns``)
        self.out: list[list[tuple[str, int]]] = []
        self.inn: list[list[tuple[str, int]]] = []
        self.facts: list[tuple[int, str, int]] = []
        self.by_type: dict[str, list[int]] = {}
        self.core_by_type: dict[str, list[int]] = {}

    def add_entity(self, name: str, etype: str, core: bool, year: int, kind: str = "", mass: int = 0) -> int:
        eid = len(self.names)
        self.names.append(name)
        self.types.append(etype)
        self.core.append(core)
        self.years.append(year)
        self.kind.append(kind)
        self.mass.append(mass)
        self.out.append([])
        self.inn.append([])
        self.by_type.setdefault(etype, []).append(eid)
        if core:
            self.core_by_type.setdefault(etype, []).append(eid)
        return eid

    def add_fact(self, s: int, rel: str, o: int) -> None:
        self.facts.append((s, rel, o))
        self.out[s].append((rel, o))
        self.inn[o].append((rel, s))

    def pool(self, etype: str, for_entity: int) -> list[int]:
        # Core entities only point at core entities, so questions (built from core) never leave the core.
        return self.core_by_type.get(etype, []) if self.core[for_entity] else self.by_type.get(etype, [])

    def domain(self, eid: int) -> str:
        return _TYPES[self.types[eid]].domain

    def forward(self, eid: int, rel: str) -> list[int]:
        return [o for r, o in self.out[eid] if r == rel]

    def inverse(self, eid: int, rel: str) -> list[int]:
        return [s for r, s in self.inn[eid] if r == rel]


# Entity types whose name is drawn with nothing before it.
_PLAIN_NAMERS: dict[str, Callable[[_Namer], str]] = {
    "country": _Namer.country,
    "city": _Namer.city,
    "university": _Namer.university,
    "film": _Namer.film,
    "disease": _Namer.disease,
    "gene": _Namer.gene,
    "pharma": _Namer.pharma,
    "band": _Namer.band,
    "record_label": _Namer.record_label,
    "coach": _Namer.person,
    "club": _Namer.club,
    "stadium": _Namer.stadium,
}
# Entity types that draw a kind (occupation, product kind, ...) and then a name.
_KINDED_NAMERS: dict[str, tuple[tuple[str, ...], Callable[[_Namer], str]]] = {
    "business_person": (_BUSINESS_OCCUPATIONS, _Namer.person),
    "product": (_PRODUCT_KINDS, _Namer.product),
    "organism": (_ORGANISM_KINDS, _Namer.organism),
    "album": (_ALBUM_KINDS, _Namer.album),
    "athlete": (_ATHLETE_POSITIONS, _Namer.person),
}


def _make_entities(config: SyntheticConfig, world: _World) -> None:
    rng = random.Random(f"hoprag-synthetic:{config.seed}:entities")
    namer = _Namer(rng)
    core_counts, dist_counts = _type_counts(config)
    for etype in _active_types(config.domains):
        spec = _TYPES[etype]
        for i in range(core_counts[etype] + dist_counts[etype]):
            core = i < core_counts[etype]
            year = rng.randint(*spec.year_range)
            kind = ""
            mass = 0
            if etype in _PLAIN_NAMERS:
                name = _PLAIN_NAMERS[etype](namer)
            elif etype in _KINDED_NAMERS:
                kinds, make_name = _KINDED_NAMERS[etype]
                kind = rng.choice(kinds)
                name = make_name(namer)
            elif etype in ("film_person", "musician"):
                # The first core people cover every occupation so that every film can find a director
                # and every album a producer.
                occupations = _FILM_OCCUPATIONS if etype == "film_person" else _MUSIC_OCCUPATIONS
                if core and i < len(occupations):
                    kind = occupations[i][0]
                else:
                    kind = rng.choices([o for o, _ in occupations], [w for _, w in occupations])[0]
                name = namer.person()
            elif etype == "company":
                kind, suffixes = rng.choice(_INDUSTRIES)
                name = namer.company(suffixes)
            elif etype == "drug":
                suffix, kind = rng.choice(_DRUG_CLASSES)
                name = namer.drug(suffix)
            elif etype == "protein":
                mass = rng.randint(12, 480)
                name = namer.protein()
            else:  # pragma: no cover - guarded by the type table
                raise AssertionError(etype)
            world.add_entity(name, etype, core, year, kind, mass)


def _make_facts(config: SyntheticConfig, world: _World) -> None:
    rng = random.Random(f"hoprag-synthetic:{config.seed}:facts")
    by_type = world.by_type
    core_by = world.core_by_type

    def pick(etype: str, subject: int, exclude: int = -1) -> int | None:
        pool = world.pool(etype, subject)
        if not pool:
            return None
        for _ in range(8):
            choice = pool[rng.randrange(len(pool))]
            if choice != exclude and choice != subject:
                return choice
        return None

    def link(
        subject: int, relation: str, target_type: str, probability: float = 1.0, exclude: int = -1
    ) -> int | None:
        """With ``probability`` (no draw at 1), a fact from ``subject`` to a drawn ``target_type``
        entity; the target, or None."""
        if probability < 1.0 and rng.random() >= probability:
            return None
        target = pick(target_type, subject, exclude)
        if target is not None:
            world.add_fact(subject, relation, target)
        return target

    # Geography: the first city of each country (in its own pool) is its capital.
    capitals: dict[int, int] = {}
    for core in (True, False):
        countries = [c for c in by_type.get("country", []) if world.core[c] == core]
        cities = [c for c in by_type.get("city", []) if world.core[c] == core]
        shuffled = countries[:]
        rng.shuffle(shuffled)
        for i, city in enumerate(cities):
            if i < len(shuffled):
                country = shuffled[i]
                capitals[country] = city
            else:
                country_pool = core_by["country"] if core else by_type["country"]
                country = country_pool[rng.randrange(len(country_pool))]
            world.add_fact(city, "city_in", country)
    for country in by_type.get("country", []):
        if country in capitals:
            world.add_fact(country, "capital", capitals[country])
    for uni in by_type.get("university", []):
        link(uni, "university_in", "city")

    def occupation_pools(people: list[int]) -> dict[tuple[bool, str], list[int]]:
        """People by (core pool?, occupation): core subjects draw from core people only."""
        pools: dict[tuple[bool, str], list[int]] = {}
        for p in people:
            pools.setdefault((True, world.kind[p]), [])
            pools.setdefault((False, world.kind[p]), [])
            if world.core[p]:
                pools[(True, world.kind[p])].append(p)
            pools[(False, world.kind[p])].append(p)
        return pools

    def pick_role(
        pools: dict[tuple[bool, str], list[int]], subject: int, occupation: str, exclude: int = -1
    ) -> int | None:
        pool = pools.get((world.core[subject], occupation), [])
        if not pool:
            return None
        for _ in range(8):
            choice = pool[rng.randrange(len(pool))]
            if choice != exclude:
                return choice
        return None

    def birthplace_and_school(people: list[int], school_probability: float) -> None:
        for p in people:
            link(p, "born_in", "city")
            link(p, "educated_at", "university", school_probability)

    if "film" in config.domains:
        people = by_type["film_person"]
        film_pools = occupation_pools(people)
        birthplace_and_school(people, 0.6)
        for core in (True, False):
            pool = [p for p in people if world.core[p] == core]
            rng.shuffle(pool)
            pairs = int(len(pool) * 0.3) // 2
            for i in range(pairs):
                a, b = pool[2 * i], pool[2 * i + 1]
                world.add_fact(a, "married_to", b)
                world.add_fact(b, "married_to", a)
        for film in by_type["film"]:
            director = pick_role(film_pools, film, "a film director")
            if director is not None:
                world.add_fact(film, "directed_by", director)
            if rng.random() < 0.6:
                writer = pick_role(film_pools, film, "a screenwriter")
                if writer is not None:
                    world.add_fact(film, "written_by", writer)
            first = pick_role(film_pools, film, "an actor")
            if first is not None:
                world.add_fact(film, "stars", first)
                if rng.random() < 0.4:
                    second = pick_role(film_pools, film, "an actor", exclude=first)
                    if second is not None:
                        world.add_fact(film, "stars", second)

    if "business" in config.domains:
        birthplace_and_school(by_type["business_person"], 0.6)
        companies = by_type["company"]
        for idx, company in enumerate(companies):
            founder = link(company, "founded_by", "business_person")
            link(company, "headquartered_in", "city")
            link(company, "ceo", "business_person", 0.5, exclude=founder if founder is not None else -1)
            # Acquirers always come earlier in the list, so acquisitions never form a cycle.
            if idx > 0 and rng.random() < 0.25:
                earlier = [
                    c for c in companies[max(0, idx - 50) : idx] if world.core[c] or not world.core[company]
                ]
                if earlier:
                    world.add_fact(company, "acquired_by", earlier[rng.randrange(len(earlier))])
        for product in by_type["product"]:
            link(product, "manufactured_by", "company")
            link(product, "designed_by", "business_person", 0.5)

    if "biomedical" in config.domains:
        for org in by_type["organism"]:
            link(org, "isolated_in", "city")
        for pharma in by_type["pharma"]:
            link(pharma, "headquartered_in", "city")
        # Genes and proteins pair up one-to-one inside each pool, as real gene products mostly do.
        for core in (True, False):
            genes = [g for g in by_type["gene"] if world.core[g] == core]
            proteins = [p for p in by_type["protein"] if world.core[p] == core]
            rng.shuffle(proteins)
            for gene, protein in zip(genes, proteins, strict=False):
                world.add_fact(gene, "encodes", protein)
        for gene in by_type["gene"]:
            link(gene, "found_in", "organism")
        for disease in by_type["disease"]:
            link(disease, "associated_with", "gene")
            link(disease, "caused_by", "organism", 0.4)
        for drug in by_type["drug"]:
            link(drug, "treats", "disease")
            link(drug, "targets", "protein")
            link(drug, "developed_by", "pharma")

    if "music" in config.domains:
        musicians = by_type["musician"]
        music_pools = occupation_pools(musicians)
        birthplace_and_school(musicians, 0.4)
        for label in by_type["record_label"]:
            link(label, "headquartered_in", "city")
        for band in by_type["band"]:
            link(band, "formed_in", "city")
            link(band, "signed_to", "record_label", 0.7)
        for musician in musicians:
            if world.kind[musician] != "a record producer":
                link(musician, "member_of", "band", 0.8)
        for album in by_type["album"]:
            link(album, "recorded_by", "band")
            if rng.random() < 0.6:
                producer = pick_role(music_pools, album, "a record producer")
                if producer is not None:
                    world.add_fact(album, "produced_by", producer)

    if "sports" in config.domains:
        birthplace_and_school(by_type["athlete"], 0.2)
        birthplace_and_school(by_type["coach"], 0.5)
        for stadium in by_type["stadium"]:
            link(stadium, "stadium_in", "city")
        for club in by_type["club"]:
            link(club, "home_ground", "stadium")
            link(club, "coached_by", "coach", 0.8)
        for athlete in by_type["athlete"]:
            link(athlete, "plays_for", "club")


def _assign_pronouns(config: SyntheticConfig, world: _World) -> None:
    """People get she/he/they (weights in ``PERSON_PRONOUNS``), everything else "it".

    An RNG of its own, so names, facts and questions are the same as before pronouns existed.
    """
    rng = random.Random(f"hoprag-synthetic:{config.seed}:pronouns")
    options = [p for p, _ in PERSON_PRONOUNS]
    weights = [w for _, w in PERSON_PRONOUNS]
    world.pronoun = [
        rng.choices(options, weights)[0] if etype in _PERSON_TYPES else "it" for etype in world.types
    ]

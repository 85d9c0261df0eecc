"""World construction: entities (with their pronouns) and facts. ``documents.py`` renders them."""

from __future__ import annotations

import random

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
            if etype in ("film_person", "musician"):
                # The first core people cover every occupation so that every film can find a director
                # and every album a producer.
                occupations = _FILM_OCCUPATIONS if etype == "film_person" else _MUSIC_OCCUPATIONS
                if core and i < len(occupations):
                    kind = occupations[i][0]
                else:
                    kind = rng.choices([o for o, _ in occupations], [w for _, w in occupations])[0]
                name = namer.person()
            elif etype == "athlete":
                kind = rng.choice(_ATHLETE_POSITIONS)
                name = namer.person()
            elif etype == "coach":
                name = namer.person()
            elif etype == "band":
                name = namer.band()
            elif etype == "album":
                kind = rng.choice(_ALBUM_KINDS)
                name = namer.album()
            elif etype == "record_label":
                name = namer.record_label()
            elif etype == "club":
                name = namer.club()
            elif etype == "stadium":
                name = namer.stadium()
            elif etype == "business_person":
                kind = rng.choice(_BUSINESS_OCCUPATIONS)
                name = namer.person()
            elif etype == "city":
                name = namer.city()
            elif etype == "country":
                name = namer.country()
            elif etype == "university":
                name = namer.university()
            elif etype == "film":
                name = namer.film()
            elif etype == "company":
                kind, suffixes = rng.choice(_INDUSTRIES)
                name = namer.company(suffixes)
            elif etype == "product":
                kind = rng.choice(_PRODUCT_KINDS)
                name = namer.product()
            elif etype == "drug":
                suffix, kind = rng.choice(_DRUG_CLASSES)
                name = namer.drug(suffix)
            elif etype == "disease":
                name = namer.disease()
            elif etype == "gene":
                name = namer.gene()
            elif etype == "protein":
                mass = rng.randint(12, 480)
                name = namer.protein()
            elif etype == "organism":
                kind = rng.choice(_ORGANISM_KINDS)
                name = namer.organism()
            elif etype == "pharma":
                name = namer.pharma()
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
        city = pick("city", uni)
        if city is not None:
            world.add_fact(uni, "university_in", city)

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
            city = pick("city", p)
            if city is not None:
                world.add_fact(p, "born_in", city)
            if rng.random() < school_probability:
                uni = pick("university", p)
                if uni is not None:
                    world.add_fact(p, "educated_at", uni)

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
            founder = pick("business_person", company)
            if founder is not None:
                world.add_fact(company, "founded_by", founder)
            city = pick("city", company)
            if city is not None:
                world.add_fact(company, "headquartered_in", city)
            if rng.random() < 0.5:
                ceo = pick("business_person", company, exclude=founder if founder is not None else -1)
                if ceo is not None:
                    world.add_fact(company, "ceo", ceo)
            # Acquirers always come earlier in the list, so acquisitions never form a cycle.
            if idx > 0 and rng.random() < 0.25:
                earlier = [
                    c for c in companies[max(0, idx - 50) : idx] if world.core[c] or not world.core[company]
                ]
                if earlier:
                    world.add_fact(company, "acquired_by", earlier[rng.randrange(len(earlier))])
        for product in by_type["product"]:
            maker = pick("company", product)
            if maker is not None:
                world.add_fact(product, "manufactured_by", maker)
            if rng.random() < 0.5:
                designer = pick("business_person", product)
                if designer is not None:
                    world.add_fact(product, "designed_by", designer)

    if "biomedical" in config.domains:
        for org in by_type["organism"]:
            city = pick("city", org)
            if city is not None:
                world.add_fact(org, "isolated_in", city)
        for pharma in by_type["pharma"]:
            city = pick("city", pharma)
            if city is not None:
                world.add_fact(pharma, "headquartered_in", city)
        # Genes and proteins pair up one-to-one inside each pool, as real gene products mostly do.
        for core in (True, False):
            genes = [g for g in by_type["gene"] if world.core[g] == core]
            proteins = [p for p in by_type["protein"] if world.core[p] == core]
            rng.shuffle(proteins)
            for gene, protein in zip(genes, proteins, strict=False):
                world.add_fact(gene, "encodes", protein)
        for gene in by_type["gene"]:
            org = pick("organism", gene)
            if org is not None:
                world.add_fact(gene, "found_in", org)
        for disease in by_type["disease"]:
            gene = pick("gene", disease)
            if gene is not None:
                world.add_fact(disease, "associated_with", gene)
            if rng.random() < 0.4:
                org = pick("organism", disease)
                if org is not None:
                    world.add_fact(disease, "caused_by", org)
        for drug in by_type["drug"]:
            for rel, target_type in (
                ("treats", "disease"),
                ("targets", "protein"),
                ("developed_by", "pharma"),
            ):
                target = pick(target_type, drug)
                if target is not None:
                    world.add_fact(drug, rel, target)

    if "music" in config.domains:
        musicians = by_type["musician"]
        music_pools = occupation_pools(musicians)
        birthplace_and_school(musicians, 0.4)
        for label in by_type["record_label"]:
            city = pick("city", label)
            if city is not None:
                world.add_fact(label, "headquartered_in", city)
        for band in by_type["band"]:
            city = pick("city", band)
            if city is not None:
                world.add_fact(band, "formed_in", city)
            if rng.random() < 0.7:
                label = pick("record_label", band)
                if label is not None:
                    world.add_fact(band, "signed_to", label)
        for musician in musicians:
            if world.kind[musician] != "a record producer" and rng.random() < 0.8:
                band = pick("band", musician)
                if band is not None:
                    world.add_fact(musician, "member_of", band)
        for album in by_type["album"]:
            band = pick("band", album)
            if band is not None:
                world.add_fact(album, "recorded_by", band)
            if rng.random() < 0.6:
                producer = pick_role(music_pools, album, "a record producer")
                if producer is not None:
                    world.add_fact(album, "produced_by", producer)

    if "sports" in config.domains:
        birthplace_and_school(by_type["athlete"], 0.2)
        birthplace_and_school(by_type["coach"], 0.5)
        for stadium in by_type["stadium"]:
            city = pick("city", stadium)
            if city is not None:
                world.add_fact(stadium, "stadium_in", city)
        for club in by_type["club"]:
            stadium = pick("stadium", club)
            if stadium is not None:
                world.add_fact(club, "home_ground", stadium)
            if rng.random() < 0.8:
                coach = pick("coach", club)
                if coach is not None:
                    world.add_fact(club, "coached_by", coach)
        for athlete in by_type["athlete"]:
            club = pick("club", athlete)
            if club is not None:
                world.add_fact(athlete, "plays_for", club)


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

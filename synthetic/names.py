"""Invented, syllable-based entity names that are unique across the world."""

from __future__ import annotations

import random
from collections.abc import Callable

_ONSETS = (
    "b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m", "n",
    "p", "qu", "r", "s", "sh", "st", "t", "th", "tr", "v", "w", "z", "cl", "sk",
)  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "i", "a")
_CODAS = ("n", "r", "l", "s", "m", "x", "nd", "rn", "ll", "ck", "th", "sk", "v", "rt")
_SURNAME_ENDS = ("eck", "ane", "ow", "ley", "ford", "wick", "mont", "er", "sen", "ard", "ell", "ing", "")
_CITY_ENDS = ("", "", "", "ford", "haven", "mar", "dale", "port", "holm", "wick", "stad", "bury")
_COUNTRY_ENDS = ("via", "ria", "land", "esh", "ara", "onia", "adia", "ovia")
_FILM_ADJ = (
    "Salt", "Silent", "Crimson", "Hollow", "Amber", "Quiet", "Broken", "Glass", "Iron", "Paper",
    "Velvet", "Golden", "Last", "Distant", "Northern", "Bitter", "Pale", "Hidden", "Restless", "Burning",
    "Winter", "Copper", "Wandering", "Lonely", "Scarlet", "Silver", "Frozen", "Painted", "Sleeping", "Crooked",
)  # fmt: skip
_FILM_NOUN = (
    "Ledger", "Harbor", "Orchard", "Lantern", "Meridian", "Tide", "Garden", "Compass", "Mirror", "Signal",
    "Archive", "Verdict", "Ferry", "Lighthouse", "Monument", "Cartographer", "Furnace", "Tapestry", "Rookery",
    "Almanac", "Carousel", "Kingdom", "Pilgrim", "Quarry", "Reckoning", "Sparrow", "Threshold", "Voyage",
    "Widow", "Orbit",
)  # fmt: skip
_INDUSTRIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("a technology", ("Systems", "Technologies", "Labs")),
    ("an energy", ("Energy", "Power")),
    ("a retail", ("Stores", "Retail")),
    ("a food", ("Foods", "Kitchens")),
    ("a logistics", ("Logistics", "Freight")),
    ("a software", ("Software", "Digital")),
    ("a manufacturing", ("Industries", "Works")),
    ("an automotive", ("Motors", "Automotive")),
    ("a textile", ("Textiles", "Mills")),
)
_PRODUCT_KINDS = (
    "a smartphone", "a laptop", "a blender", "a drone", "an electric bicycle", "a camera", "a smartwatch",
    "a vacuum cleaner", "a game console", "a coffee machine",
)  # fmt: skip
_PRODUCT_ENDS = ("", "", " Pro", " Mini", " Max", " One", " Air", " 200", " 500", " X")
_DRUG_CLASSES: tuple[tuple[str, str], ...] = (
    ("mab", "a monoclonal antibody"),
    ("zumab", "a monoclonal antibody"),
    ("tinib", "a kinase inhibitor"),
    ("vir", "an antiviral drug"),
    ("cillin", "an antibiotic"),
    ("statin", "a statin"),
    ("olol", "a beta blocker"),
    ("pril", "an ACE inhibitor"),
    ("azole", "an antifungal drug"),
)
_ORGANISM_KINDS = ("a bacterium", "a fungus", "a parasite", "a virus", "an alga")
_FILM_OCCUPATIONS = (("a film director", 3), ("an actor", 5), ("a screenwriter", 2))
_BUSINESS_OCCUPATIONS = ("an entrepreneur", "a business executive", "an engineer", "an investor")
# The first core musicians cover every occupation, so that every album can find a producer.
_MUSIC_OCCUPATIONS = (
    ("a singer", 3),
    ("a guitarist", 3),
    ("a drummer", 2),
    ("a bassist", 2),
    ("a record producer", 2),
)
_ALBUM_KINDS = ("a studio album", "a live album", "a debut album", "a concept album")
_ATHLETE_POSITIONS = ("a goalkeeper", "a defender", "a midfielder", "a forward")
_BAND_NOUNS = (
    "Foxes", "Lanterns", "Pilots", "Ravens", "Echoes", "Comets", "Wolves", "Strangers", "Tigers", "Owls",
    "Drifters", "Sailors", "Giants", "Shadows", "Rivers", "Mirrors", "Sparks", "Outlaws", "Hornets", "Kites",
)  # fmt: skip
_LABEL_ENDS = ("Records", "Music", "Recordings", "Sound")
_CLUB_PATTERNS = ("{r} FC", "{r} United", "{r} Rovers", "Athletic {r}", "{r} Wanderers", "Sporting {r}")
_STADIUM_ENDS = ("Park", "Arena", "Stadium", "Ground", "Field")
_PHARMA_ENDS = ("Pharma", "Therapeutics", "Biologics", "Biosciences", "Pharmaceuticals")
# Invented names must not collide with well-known real places that the syllable grammar can produce.
_REAL_NAMES = frozenset(
    (
        "roma", "lima", "paris", "london", "berlin", "sofia", "vienna", "madrid", "tokyo", "dallas", "boston",
        "denver", "moscow", "cairo", "delhi", "oslo", "riga", "kiev", "milan", "nice", "bern", "doha", "dubai",
        "malta", "cuba", "peru", "chad", "mali", "iran", "iraq", "india", "china", "japan", "tonga", "samoa",
        "kenya", "ghana", "congo", "gabon", "benin", "nepal", "bolivia", "latvia", "serbia", "libya", "syria",
        "zambia", "gambia", "nigeria", "liberia", "algeria", "tunisia", "austria", "russia", "slovenia",
        "slovakia", "estonia", "armenia", "romania", "croatia", "bulgaria", "albania", "georgia", "finland",
        "iceland", "ireland", "poland", "holland", "thailand", "scotland", "bangladesh", "sweden", "norway",
        "denmark", "greece", "turkey", "spain", "italy", "france", "canada", "mexico", "brazil", "chile",
        "panama", "haiti", "jamaica", "dakota", "texas",
    )
)  # fmt: skip


class _Namer:
    """Draws invented names that are unique (case-insensitively) across the whole world."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def root(self, syllables: int, coda: float = 0.5) -> str:
        r = self.rng
        word = "".join(r.choice(_ONSETS) + r.choice(_VOWELS) for _ in range(syllables))
        if r.random() < coda:
            word += r.choice(_CODAS)
        return word.capitalize()

    @staticmethod
    def join(root: str, suffix: str) -> str:
        # "Codro" + "omin" reads better as "Codromin" than as "Codroomin".
        if suffix[:1] in "aeiouy" and suffix and root[-1:] in "aeiou":
            root = root[:-1]
        return root + suffix

    def unique(self, make: Callable[[], str]) -> str:
        for _ in range(10_000):
            name = make()
            key = name.casefold()
            if key not in self.used and key not in _REAL_NAMES:
                self.used.add(key)
                return name
        raise RuntimeError("could not draw a fresh name; the name space is exhausted")

    def person(self) -> str:
        return self.unique(
            lambda: f"{self.root(2, 0.3)} {self.join(self.root(2, 0.4), self.rng.choice(_SURNAME_ENDS))}"
        )

    def city(self) -> str:
        def make() -> str:
            suffix = self.rng.choice(_CITY_ENDS)
            return self.root(2, 0.0 if suffix else 0.8) + suffix

        return self.unique(make)

    def country(self) -> str:
        return self.unique(lambda: self.join(self.root(2, 0.0), self.rng.choice(_COUNTRY_ENDS)))

    def university(self) -> str:
        def make() -> str:
            root = self.root(2, 0.7)
            pattern = self.rng.randrange(4)
            if pattern == 0:
                return f"{root} College"
            if pattern == 1:
                return f"University of {root}"
            if pattern == 2:
                return f"{root} Institute of Technology"
            return f"{root} University"

        return self.unique(make)

    def film(self) -> str:
        def make() -> str:
            r = self.rng
            pattern = r.randrange(3)
            if pattern == 0:
                return f"The {r.choice(_FILM_ADJ)} {r.choice(_FILM_NOUN)}"
            if pattern == 1:
                return f"The {r.choice(_FILM_NOUN)} of {self.root(2, 0.6)}"
            return f"{self.root(2, 0.6)}'s {r.choice(_FILM_NOUN)}"

        return self.unique(make)

    def company(self, suffixes: tuple[str, ...]) -> str:
        return self.unique(lambda: f"{self.root(2, 0.5)} {self.rng.choice(suffixes)}")

    def product(self) -> str:
        return self.unique(lambda: self.root(2, 0.6) + self.rng.choice(_PRODUCT_ENDS))

    def drug(self, suffix: str) -> str:
        return self.unique(lambda: self.join(self.root(2, 0.0), suffix))

    def disease(self) -> str:
        def make() -> str:
            r = self.rng
            pattern = r.randrange(5)
            if pattern == 0:
                return f"{self.root(2, 0.6)} syndrome"
            if pattern == 1:
                return f"{self.root(2, 0.6)} disease"
            if pattern == 2:
                return f"{self.root(2, 0.6)} fever"
            if pattern == 3:
                return self.root(2, 1.0) + "osis"
            return self.root(2, 1.0) + "itis"

        return self.unique(make)

    def gene(self) -> str:
        # Two syllables plus a coda: short three-letter symbols such as "SOX5" are often real genes.
        return self.unique(lambda: f"{self.root(2, 1.0).upper()}{self.rng.randint(1, 19)}")

    def protein(self) -> str:
        ends = ("in", "ase", "ulin", "omin", "ectin", "orin")
        return self.unique(lambda: self.join(self.root(2, 0.0), self.rng.choice(ends)))

    def organism(self) -> str:
        def make() -> str:
            r = self.rng
            genus = self.join(self.root(2, 0.0), r.choice(("ia", "us", "ella", "omyces", "obacter", "ium")))
            species = self.join(self.root(2, 0.0).lower(), r.choice(("i", "ae", "ensis", "is", "um", "ata")))
            return f"{genus} {species}"

        return self.unique(make)

    def pharma(self) -> str:
        return self.unique(lambda: f"{self.root(2, 0.5)} {self.rng.choice(_PHARMA_ENDS)}")

    def band(self) -> str:
        def make() -> str:
            r = self.rng
            if r.randrange(2) == 0:
                return f"The {r.choice(_FILM_ADJ)} {r.choice(_BAND_NOUNS)}"
            return f"{self.root(2, 0.6)} {r.choice(_BAND_NOUNS)}"

        return self.unique(make)

    def album(self) -> str:
        def make() -> str:
            r = self.rng
            if r.randrange(2) == 0:
                return f"{r.choice(_FILM_ADJ)} {r.choice(_FILM_NOUN)}s"
            return f"Songs from {self.root(2, 0.6)}"

        return self.unique(make)

    def record_label(self) -> str:
        return self.unique(lambda: f"{self.root(2, 0.5)} {self.rng.choice(_LABEL_ENDS)}")

    def club(self) -> str:
        return self.unique(lambda: self.rng.choice(_CLUB_PATTERNS).format(r=self.root(2, 0.5)))

    def stadium(self) -> str:
        return self.unique(lambda: f"{self.root(2, 0.6)} {self.rng.choice(_STADIUM_ENDS)}")

"""Question making: unambiguous bridge, comparison and compositional questions over a built world."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import QUESTION_TYPES, SyntheticConfig
from .relation_texts import _RELATIONS
from .schema import (
    _EARLIER,
    _LATER,
    _PERSON_TYPES,
    _SAME_KEYS,
    _TYPES,
    _VIA_EDGES,
    _YEAR_CMP_GENERAL,
    _YEAR_CMP_VIA,
    _YEAR_QUESTIONS,
    GENERAL_DOMAIN,
    _active_types,
)
from .world import _World


@dataclass
class _Question:
    question: str
    answer: str
    qtype: str
    domain: str
    docs: list[int]
    entities: list[int]
    reasoning: list[tuple[str, str, str]]
    signature: tuple[Any, ...]
    # Character span of the topic entity's mention in ``question`` (see ``_topic``).
    topic_span: tuple[int, int] = (0, 0)
    # The gold search plan (see ``PlanStep``), its texts still holding the topic markers.
    plan: list[PlanStep] = field(default_factory=list)


@dataclass(frozen=True)
class PlanStep:
    """One step of a question's gold search plan, in the PAI-2 planner's format.

    ``step`` is a one-hop question; a step that needs an earlier step's answer names that answer by a
    ``[description]`` placeholder, the ``ref`` of the earlier step (``None`` when no later step refers
    to this one). ``answer`` is what the step finds: an entity name or a year.
    """

    step: str
    answer: str
    ref: str | None = None


# The topic entity (the entity a question starts from: the chain's start, or the first compared side)
# is wrapped in these private-use characters while the question is put together, so that its mention
# can be located exactly (and respelled later) whatever templates surround it.
_TOPIC_OPEN = "\ue000"
_TOPIC_CLOSE = "\ue001"


def _topic(name: str) -> str:
    return f"{_TOPIC_OPEN}{name}{_TOPIC_CLOSE}"


def _finish(text: str) -> tuple[str, tuple[int, int]]:
    """The question text without the topic markers (first letter upper-cased) and the topic's span."""
    start = text.index(_TOPIC_OPEN)
    end = text.index(_TOPIC_CLOSE) - 1
    plain = text.replace(_TOPIC_OPEN, "", 1).replace(_TOPIC_CLOSE, "", 1)
    return _ucfirst(plain), (start, end)


def _ucfirst(text: str) -> str:
    return text[:1].upper() + text[1:]


def _pick_template(rng: random.Random, templates: Sequence[str], nested: bool) -> str:
    """A random template; for a nested description only one that ends with it, when there is one.

    "the protein encoded by the gene linked to X" stays readable, while "the protein that the gene linked
    to X codes for" buries the verb after a long description, so long descriptions go last.
    """
    if nested:
        tail = [t for t in templates if t.endswith(("{x}", "{x}?"))]
        if tail:
            return rng.choice(tail)
    return rng.choice(templates)


def _aliases(answer: str) -> list[str]:
    # Film titles are often cited without their leading article.
    if answer.startswith("The ") and len(answer) > 4:
        return [answer[4:]]
    return []


class _QuestionMaker:
    def __init__(self, config: SyntheticConfig, world: _World) -> None:
        self.config = config
        self.world = world
        self.rng = random.Random(f"hoprag-synthetic:{config.seed}:questions")
        self.seen: set[tuple[Any, ...]] = set()
        self.seen_text: set[str] = set()
        self.domain_types: dict[str, list[str]] = {
            d: [
                t
                for t in _active_types(config.domains)
                if _TYPES[t].domain == d and world.core_by_type.get(t)
            ]
            for d in config.domains
        }
        # Compositional chains start with an inverse step; starting only where one exists keeps the
        # rejection rate low (films, for example, are never the object of a relation).
        self.inverse_starts: dict[str, list[int]] = {}
        for d in config.domains:
            self.inverse_starts[d] = [
                e
                for t in self.domain_types[d]
                for e in world.core_by_type[t]
                if self._moves(e, d, {e}, inverse=True)
            ]
        # Yes/no comparisons alternate their gold answer; "yes" is harder to find and would be rarer.
        self.yes_no = {"yes": 0, "no": 0}
        # Gold plans word their steps with an RNG of their own, so that planning changes no question.
        self.plan_rng = random.Random(f"hoprag-synthetic:{config.seed}:plans")
        self.mixed_hop_rng = random.Random(f"hoprag-synthetic:{config.seed}:mixed-hop-comparisons")

    # -- chains ----------------------------------------------------------------------------------

    def _allowed(self, eid: int, domain: str, visited: set[int]) -> bool:
        w = self.world
        return w.core[eid] and eid not in visited and w.domain(eid) in (domain, GENERAL_DOMAIN)

    def _moves(self, cur: int, domain: str, visited: set[int], inverse: bool) -> list[tuple[str, bool, int]]:
        w = self.world
        moves: list[tuple[str, bool, int]] = []
        if inverse:
            counts: dict[str, list[int]] = {}
            for rel, subj in w.inn[cur]:
                counts.setdefault(rel, []).append(subj)
            for rel, subjects in counts.items():
                if (
                    len(subjects) == 1
                    and _RELATIONS[rel].inv_np
                    and self._allowed(subjects[0], domain, visited)
                ):
                    moves.append((rel, True, subjects[0]))
        else:
            counts = {}
            for rel, obj in w.out[cur]:
                counts.setdefault(rel, []).append(obj)
            for rel, objects in counts.items():
                if len(objects) == 1 and self._allowed(objects[0], domain, visited):
                    moves.append((rel, False, objects[0]))
        return moves

    def _chain(self, domain: str, hops: int, compositional: bool) -> _Question | None:
        w = self.world
        rng = self.rng
        types = self.domain_types[domain]
        if compositional:
            start_pool = self.inverse_starts[domain]
        elif types:
            start_pool = w.core_by_type[types[rng.randrange(len(types))]]
        else:
            start_pool = []
        if not start_pool:
            return None
        start = start_pool[rng.randrange(len(start_pool))]
        attr_final = rng.random() < 0.25
        visited = {start}
        cur = start
        docs: list[int] = []
        steps: list[tuple[str, bool, int, int]] = []  # relation, inverse?, from, to
        for _ in range(hops + 3):
            if attr_final and steps and len(docs) + (cur not in docs) == hops:
                break
            if not attr_final and steps and len(docs) == hops:
                break
            if len(docs) > hops:
                return None
            want_inverse = compositional and (not steps or rng.random() < 0.3)
            moves = self._moves(cur, domain, visited, inverse=want_inverse)
            if not moves and compositional and steps:
                moves = self._moves(cur, domain, visited, inverse=not want_inverse)
            if not moves:
                return None
            # Favour steps that stay inside the domain; otherwise most long chains end in geography.
            weights = [1.0 if w.domain(m[2]) == GENERAL_DOMAIN else 3.0 for m in moves]
            rel, inv, nxt = rng.choices(moves, weights)[0]
            # The document that states the fact: the subject's, or the current one if it states it too.
            subj = nxt if inv else cur
            doc = cur if (inv and _RELATIONS[rel].both_docs) else subj
            if doc not in docs:
                docs.append(doc)
            steps.append((rel, inv, cur, nxt))
            visited.add(nxt)
            cur = nxt
        else:
            return None
        if attr_final and cur not in docs:
            docs.append(cur)
        if len(docs) != hops:
            return None

        names = w.names
        desc = _topic(names[start])
        reasoning: list[tuple[str, str, str]] = []
        plan: list[PlanStep] = []
        for k, (rel, inv, frm, to) in enumerate(steps):
            text = _RELATIONS[rel]
            last = k == len(steps) - 1 and not attr_final
            # The step asks for this hop alone; its subject is the topic, or the previous step's answer
            # by the question's own description of it.
            subject = desc if k == 0 else f"[{desc}]"
            step_text = self.plan_rng.choice(text.inv_q if inv else text.fwd_q).format(x=subject)
            if inv:
                templates = text.inv_q if last else text.inv_np
                reasoning.append((names[to], rel, names[frm]))
            else:
                templates = text.fwd_q if last else text.fwd_np
                reasoning.append((names[frm], rel, names[to]))
            desc = _pick_template(rng, templates, nested=k > 0).format(x=desc)
            plan.append(PlanStep(step_text, names[to], None if last else f"[{desc}]"))
        if attr_final:
            etype = w.types[cur]
            step_text = self.plan_rng.choice(_YEAR_QUESTIONS[etype]).format(x=f"[{desc}]")
            desc = _pick_template(rng, _YEAR_QUESTIONS[etype], nested=True).format(x=desc)
            answer = str(w.years[cur])
            reasoning.append((names[cur], _TYPES[etype].year_attr, answer))
            plan.append(PlanStep(step_text, answer))
        else:
            answer = names[cur]
        entities = [start] + [to for _, _, _, to in steps]
        signature = ("chain", start, tuple((r, i, t) for r, i, _, t in steps), attr_final)
        qtype = "compositional" if compositional else "bridge"
        text, span = _finish(desc)
        return _Question(text, answer, qtype, domain, docs, entities, reasoning, signature, span, plan)

    # -- comparisons -----------------------------------------------------------------------------

    def _side(self, target_type: str, via: tuple[str, str] | None) -> tuple[int | None, int] | None:
        w = self.world
        rng = self.rng
        if via is None:
            pool = w.core_by_type.get(target_type, [])
            return (None, pool[rng.randrange(len(pool))]) if pool else None
        start_type, rel = via
        pool = w.core_by_type.get(start_type, [])
        if not pool:
            return None
        start = pool[rng.randrange(len(pool))]
        targets = w.forward(start, rel)
        if len(targets) != 1 or not w.core[targets[0]]:
            return None
        return start, targets[0]

    def _comparison(self, domain: str, hops: int) -> _Question | None:
        w = self.world
        rng = self.rng
        names = w.names
        n_via = hops - 2
        candidates = [
            t
            for t in self.domain_types[domain]
            if n_via == 0 or any(w.core_by_type.get(s) for s, _ in _VIA_EDGES.get(t, ()))
        ]
        if not candidates:
            return None
        target_type = candidates[rng.randrange(len(candidates))]
        vias = [v for v in _VIA_EDGES.get(target_type, ()) if w.core_by_type.get(v[0])]
        via_a = vias[rng.randrange(len(vias))] if n_via == 2 else None
        via_b = vias[rng.randrange(len(vias))] if n_via >= 1 else None
        same_keys = _SAME_KEYS.get(target_type, ())
        same = bool(same_keys) and rng.random() < 0.5
        side_a = self._side(target_type, via_a)
        if side_a is None:
            return None
        start_a, target_a = side_a
        key = same_keys[rng.randrange(len(same_keys))] if same else ""
        obj_a = obj_b = -1
        yes = False
        if same:
            objects = w.forward(target_a, key)
            if len(objects) != 1:
                return None
            obj_a = objects[0]
            yes = self.yes_no["yes"] <= self.yes_no["no"]
        side_b: tuple[int | None, int] | None
        if same and yes:
            siblings = [
                t for t in w.inverse(obj_a, key) if t != target_a and w.core[t] and w.types[t] == target_type
            ]
            if not siblings:
                return None
            target_b = siblings[rng.randrange(len(siblings))]
            if via_b is None:
                side_b = (None, target_b)
            else:
                starts = [s for s in w.inverse(target_b, via_b[1]) if w.core[s] and w.types[s] == via_b[0]]
                side_b = (starts[rng.randrange(len(starts))], target_b) if starts else None
        else:
            side_b = self._side(target_type, via_b)
        if side_b is None:
            return None
        start_b, target_b = side_b
        chain_entities = [e for e in (start_a, target_a, start_b, target_b) if e is not None]
        if len(set(chain_entities)) != len(chain_entities):
            return None
        if same:
            objects = w.forward(target_b, key)
            if len(objects) != 1:
                return None
            obj_b = objects[0]
            if (obj_a == obj_b) != yes:
                return None

        def describe(
            start: int | None,
            target: int,
            via: tuple[str, str] | None,
            topic: bool,
            pick: random.Random = rng,
        ) -> str:
            first = start if start is not None and via is not None else target
            name = _topic(names[first]) if topic else names[first]
            if start is None or via is None:
                return name
            return pick.choice(_RELATIONS[via[1]].fwd_np).format(x=name)

        reasoning: list[tuple[str, str, str]] = []
        docs: list[int] = []
        for start, target, via in ((start_a, target_a, via_a), (start_b, target_b, via_b)):
            if start is not None and via is not None:
                docs.append(start)
                reasoning.append((names[start], via[1], names[target]))
            docs.append(target)
        spec = _TYPES[target_type]
        if same:
            reasoning.append((names[target_a], key, names[obj_a]))
            reasoning.append((names[target_b], key, names[obj_b]))
            desc_a = describe(start_a, target_a, via_a, topic=True)
            desc_b = describe(start_b, target_b, via_b, topic=False)
            question = rng.choice(_RELATIONS[key].same_q).format(a=desc_a, b=desc_b)
            answer = "yes" if yes else "no"
            entities = [*chain_entities, obj_a] + ([obj_b] if obj_b != obj_a else [])
            signature: tuple[Any, ...] = (
                "same",
                key,
                tuple(sorted([(start_a, target_a), (start_b, target_b)], key=str)),
            )
        else:
            year_a, year_b = w.years[target_a], w.years[target_b]
            if year_a == year_b:
                return None
            reasoning.append((names[target_a], spec.year_attr, str(year_a)))
            reasoning.append((names[target_b], spec.year_attr, str(year_b)))
            earlier = rng.random() < 0.5
            a_wins = (year_a < year_b) == earlier
            cmp = rng.choice(_EARLIER if earlier else _LATER)
            if n_via == 2 and start_a is not None and start_b is not None and via_a is not None:
                start_type = _TYPES[w.types[start_a]]
                template = rng.choice(_YEAR_CMP_VIA)
                if via_a == via_b:
                    question = template.format(
                        role=_RELATIONS[via_a[1]].role,
                        snoun=start_type.noun,
                        vp=spec.year_vp,
                        cmp=cmp,
                        rel="who" if target_type in _PERSON_TYPES else "that",
                        a=_topic(names[start_a]),
                        b=names[start_b],
                    )
                    answer = names[start_a] if a_wins else names[start_b]
                else:
                    # The sides reach their compared entities by different hops, which one role cannot
                    # name; each side is described by its own hop. (The role template was used here
                    # once, asking about a role one side's answer never took.) Worded by an RNG of its
                    # own, so no other question changed when this was fixed.
                    pick = self.mixed_hop_rng
                    question = pick.choice(_YEAR_CMP_GENERAL).format(
                        noun=spec.noun,
                        vp=spec.year_vp,
                        cmp=cmp,
                        wh="Who" if target_type in _PERSON_TYPES else "Which one",
                        a=describe(start_a, target_a, via_a, topic=True, pick=pick),
                        b=describe(start_b, target_b, via_b, topic=False, pick=pick),
                    )
                    answer = names[target_a] if a_wins else names[target_b]
            else:
                template = rng.choice(_YEAR_CMP_GENERAL)
                question = template.format(
                    noun=spec.noun,
                    vp=spec.year_vp,
                    cmp=cmp,
                    wh="Who" if target_type in _PERSON_TYPES else "Which one",
                    a=describe(start_a, target_a, via_a, topic=True),
                    b=describe(start_b, target_b, via_b, topic=False),
                )
                answer = names[target_a] if a_wins else names[target_b]
            entities = chain_entities
            signature = ("year", tuple(sorted([(start_a, target_a), (start_b, target_b)], key=str)))
        text, span = _finish(question)
        sides = ((start_a, target_a, via_a, True), (start_b, target_b, via_b, False))
        plan = self._comparison_plan(sides, key if same else None)
        return _Question(text, answer, "comparison", domain, docs, entities, reasoning, signature, span, plan)

    def _comparison_plan(
        self, sides: Sequence[tuple[int | None, int, tuple[str, str] | None, bool]], same_key: str | None
    ) -> list[PlanStep]:
        """Each side's hop to its compared entity first, then the compared value of each side."""
        w = self.world
        names = w.names
        rng = self.plan_rng
        plan: list[PlanStep] = []
        subjects: list[str] = []
        for start, target, via, topic in sides:
            if start is None or via is None:
                subjects.append(_topic(names[target]) if topic else names[target])
                continue
            start_name = _topic(names[start]) if topic else names[start]
            ref = "[" + rng.choice(_RELATIONS[via[1]].fwd_np).format(x=start_name) + "]"
            plan.append(
                PlanStep(rng.choice(_RELATIONS[via[1]].fwd_q).format(x=start_name), names[target], ref)
            )
            subjects.append(ref)
        for (_, target, _, _), subject in zip(sides, subjects, strict=True):
            if same_key is not None:
                (obj,) = w.forward(target, same_key)
                template, value = rng.choice(_RELATIONS[same_key].fwd_q), names[obj]
            else:
                template, value = rng.choice(_YEAR_QUESTIONS[w.types[target]]), str(w.years[target])
            plan.append(PlanStep(template.format(x=subject), value))
        return plan

    # -- driver ----------------------------------------------------------------------------------

    def _one(self, domain: str, qtype: str, hops: int) -> _Question | None:
        if qtype == "comparison":
            return self._comparison(domain, hops)
        return self._chain(domain, hops, compositional=qtype == "compositional")

    def _try(self, domain: str, qtype: str, attempts: int) -> _Question | None:
        hop_values = list(range(self.config.min_hops, self.config.max_hops + 1))
        self.rng.shuffle(hop_values)
        for hops in hop_values:
            for _ in range(attempts):
                q = self._one(domain, qtype, hops)
                if q is None or q.signature in self.seen or q.question in self.seen_text:
                    continue
                self.seen.add(q.signature)
                self.seen_text.add(q.question)
                if q.answer in self.yes_no and q.qtype == "comparison":
                    self.yes_no[q.answer] += 1
                return q
        return None

    def split(self, count: int, domains: Sequence[str]) -> list[_Question]:
        """``count`` distinct questions, cycling through every (domain, type) pair in a shuffled order."""
        combos = [(d, t) for d in domains for t in QUESTION_TYPES]
        # A combination is given up after several failed rounds in a row, not after one unlucky round.
        failures = dict.fromkeys(combos, 0)
        exhausted: set[tuple[str, str]] = set()
        out: list[_Question] = []
        order: list[tuple[str, str]] = []
        while len(out) < count:
            if not order:
                order = [c for c in combos if c not in exhausted]
                if not order:
                    raise ValueError(
                        f"could only build {len(out)} of {count} distinct questions over domains {list(domains)}; "
                        "raise num_documents or ask for fewer questions"
                    )
                self.rng.shuffle(order)
            combo = order.pop()
            q = self._try(*combo, attempts=40)
            if q is None:
                failures[combo] += 1
                if failures[combo] >= 3:
                    exhausted.add(combo)
            else:
                failures[combo] = 0
                out.append(q)
        return out

"""The evidence graph of an answer, laid out server-side and drawn as SVG (no JavaScript library).

:func:`evidence_graph` takes an answer as the QA deployment returns it (``Answer.to_dict()``: its
``triples``, ``steps`` with their seeds and clue triples, ``answer``) and draws the answer's triples:
entities as nodes, triples as labelled arrows. Seed entities are ringed, the entities of the
highest-scored triples drawn larger, the answer entity marked, and the shortest paths that connect
each seed to the answer entity highlighted. Nodes and edges are coloured by the plan step whose
clue queries found them (grey: found by no step, e.g. retrieve mode's single retrieval).

The layout is networkx's Kamada-Kawai layout of each connected component (deterministic: the same
answer always gives the same picture), the components packed in rows on a canvas that grows with
the square root of the node count, so 50 triples stay readable and a lone seed does not squeeze
the rest into a corner. The SVG's elements carry what a test or a script needs: ``<g class="node"
data-entity=...>`` and ``<g class="edge" data-relation=... data-head=... data-tail=...>``.
Pure: no I/O, no state.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Step colours (colour-blind-safe Okabe-Ito order); entities no step found are grey.
STEP_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
NO_STEP_COLOUR = "#8a8a8a"
PATH_COLOUR = "#d62728"
LABEL_CHARS = 28


@dataclass
class GraphNode:
    """An entity of the graph with its role and position (SVG user units)."""

    entity: str
    step: int | None = None
    seed: bool = False
    answer: bool = False
    top: bool = False
    on_path: bool = False
    score: float = 0.0
    x: float = 0.0
    y: float = 0.0


@dataclass
class GraphEdge:
    """A triple of the graph."""

    head: str
    relation: str
    tail: str
    score: float
    step: int | None = None
    on_path: bool = False


@dataclass
class EvidenceGraph:
    """The laid-out graph and its SVG."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    paths: list[list[str]] = field(default_factory=list)
    width: int = 0
    height: int = 0
    svg: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the SVG and the nodes/edges/paths it draws (without positions)."""
        return {
            "svg": self.svg,
            "nodes": [
                {"entity": n.entity, "step": n.step, "seed": n.seed, "answer": n.answer, "top": n.top}
                for n in self.nodes
            ],
            "edges": [
                {"head": e.head, "relation": e.relation, "tail": e.tail, "step": e.step, "on_path": e.on_path}
                for e in self.edges
            ],
            "paths": self.paths,
            "step_colours": {
                str(step): _colour(step)
                for step in sorted({n.step for n in self.nodes if n.step is not None})
            },
        }


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).strip()


def _is_answer(entity: str, answer: str) -> bool:
    """Whether ``entity`` is (in) the answer: equal when normalised, or named whole in the answer (for
    answers such as "Carl Boese and Heinz Paul"), names of at least 4 characters only."""
    e, a = _norm(entity), _norm(answer)
    if not e or not a:
        return False
    return e == a or (len(e) >= 4 and f" {e} " in f" {a} ")


def _triple_steps(steps: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], int]:
    """(head, relation, tail) → the first step whose clue queries found that triple."""
    found: dict[tuple[str, str, str], int] = {}
    for step in steps:
        for clue in step.get("clues", []):
            for t in clue.get("triples", []):
                found.setdefault((t["head"], t["relation"], t["tail"]), int(step.get("index", 0)))
    return found


def build_graph(answer: Mapping[str, Any], max_triples: int = 50, top_entities: int = 5) -> EvidenceGraph:
    """The graph of ``answer`` (an ``Answer.to_dict()``) without layout: its ``max_triples`` best
    triples, the seeds of its steps, the answer entities and the shortest seed → answer paths."""
    import networkx as nx

    triples = sorted(answer.get("triples", []), key=lambda t: -float(t.get("score", 0.0)))[:max_triples]
    steps = answer.get("steps", []) or []
    by_triple = _triple_steps(steps)
    graph = EvidenceGraph()
    nodes: dict[str, GraphNode] = {}

    def node(name: str) -> GraphNode:
        if name not in nodes:
            nodes[name] = GraphNode(entity=name)
        return nodes[name]

    seen: set[tuple[str, str, str]] = set()
    for t in triples:
        key = (str(t["head"]), str(t["relation"]), str(t["tail"]))
        if key in seen:
            continue
        seen.add(key)
        step = by_triple.get(key)
        edge = GraphEdge(*key, score=float(t.get("score", 0.0)), step=step)
        graph.edges.append(edge)
        for name in (edge.head, edge.tail):
            n = node(name)
            n.score = max(n.score, edge.score)
            if step is not None and (n.step is None or step < n.step):
                n.step = step
    # A seed is named as its linker found it (maybe in other case): it marks the KG entity of that name.
    by_norm = {_norm(name): name for name in nodes}
    for step in steps:  # seeds, coloured by the step that linked them, drawn even when no triple has them
        for name in step.get("seed_sources", {}) or {}:
            n = node(by_norm.get(_norm(str(name)), str(name)))
            n.seed = True
            n.step = int(step.get("index", 0)) if n.step is None else min(n.step, int(step.get("index", 0)))
    text = str(answer.get("answer", ""))
    if not answer.get("not_enough_info"):
        for n in nodes.values():
            n.answer = _is_answer(n.entity, text)
    scored = sorted((n for n in nodes.values() if n.score > 0), key=lambda n: (-n.score, n.entity))
    for n in scored[:top_entities]:
        n.top = True
    # Paths: the undirected shortest paths from each seed to each answer entity.
    undirected = nx.Graph()
    undirected.add_nodes_from(nodes)
    undirected.add_edges_from((e.head, e.tail) for e in graph.edges)
    on_path: set[frozenset[str]] = set()
    for seed in (n.entity for n in nodes.values() if n.seed):
        for target in (n.entity for n in nodes.values() if n.answer and n.entity != seed):
            if not nx.has_path(undirected, seed, target):
                continue
            for path in list(nx.all_shortest_paths(undirected, seed, target))[:3]:
                graph.paths.append(path)
                for a, b in itertools.pairwise(path):
                    on_path.add(frozenset((a, b)))
                for name in path:
                    nodes[name].on_path = True
    for e in graph.edges:
        e.on_path = frozenset((e.head, e.tail)) in on_path
    graph.nodes = list(nodes.values())
    return graph


def _component_layout(g: Any) -> dict[str, tuple[float, float]]:
    """One connected component laid out in about [-1, 1]² (Kamada-Kawai: graph distances kept as
    drawing distances, deterministic)."""
    import networkx as nx

    names = list(g.nodes)
    if len(names) == 1:
        return {names[0]: (0.0, 0.0)}
    if len(names) == 2:
        return {names[0]: (-1.0, 0.0), names[1]: (1.0, 0.0)}
    pos = nx.kamada_kawai_layout(g)
    # Each axis stretched to [-1, 1] on its own: a long chain also uses the square's other side,
    # which leaves its labels more room (at the price of some distortion).
    out: dict[str, tuple[float, float]] = {}
    lo = [min(float(p[i]) for p in pos.values()) for i in (0, 1)]
    hi = [max(float(p[i]) for p in pos.values()) for i in (0, 1)]
    for name, p in pos.items():
        xy = [2 * (float(p[i]) - lo[i]) / ((hi[i] - lo[i]) or 1.0) - 1 for i in (0, 1)]
        out[name] = (xy[0], xy[1])
    return out


def layout(graph: EvidenceGraph, px_per_node: float = 130.0) -> EvidenceGraph:
    """Positions for ``graph``'s nodes: each connected component laid out on its own, in a square
    whose side grows with the square root of its node count, the squares packed in rows (largest
    first), then scaled to a canvas of about ``px_per_node`` pixels per node along each side."""
    import networkx as nx

    graph.width, graph.height = 420, 320
    if not graph.nodes:
        return graph
    g = nx.Graph()
    g.add_nodes_from(x.entity for x in graph.nodes)
    g.add_edges_from((e.head, e.tail) for e in graph.edges)
    components = sorted(
        (sorted(c) for c in nx.connected_components(g)), key=lambda c: (-len(c), c[0])
    )  # largest first, then by name: the same answer always gives the same picture
    sides = [math.sqrt(len(c)) for c in components]
    row_limit = max(max(sides), math.sqrt(sum(x * x for x in sides)) * 1.6)  # wider than tall, as screens
    placed: dict[str, tuple[float, float]] = {}
    x = y = row_height = width = 0.0
    for component, side in zip(components, sides, strict=True):
        if x > 0 and x + side > row_limit + 1e-9:  # next row
            x, y, row_height = 0.0, y + row_height, 0.0
        pos = _component_layout(g.subgraph(component))
        for name, (px, py) in pos.items():  # [-1, 1] → the component's square, 10% inset
            placed[name] = (x + side * (0.5 + 0.4 * px), y + side * (0.5 + 0.4 * py))
        x += side
        row_height = max(row_height, side)
        width = max(width, x)
    height = y + row_height
    margin_x, margin_y = 110.0, 50.0  # room for labels at the edges
    graph.width = int(max(420, width * px_per_node + 2 * margin_x))
    graph.height = int(max(320, height * px_per_node + 2 * margin_y))
    scale = min((graph.width - 2 * margin_x) / width, (graph.height - 2 * margin_y) / height)
    for node in graph.nodes:
        px, py = placed[node.entity]
        node.x = margin_x + px * scale
        node.y = margin_y + py * scale
    return graph


def _colour(step: int | None) -> str:
    return NO_STEP_COLOUR if step is None else STEP_COLOURS[step % len(STEP_COLOURS)]


def _label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _attr(value: object) -> str:
    return html.escape(str(value), quote=True)


def _radius(node: GraphNode) -> float:
    return 13.0 if node.answer or node.seed else 11.0 if node.top else 8.0


def render_svg(graph: EvidenceGraph) -> str:
    """The laid-out graph as one standalone ``<svg>`` element (all text escaped)."""
    by_name = {n.entity: n for n in graph.nodes}
    parts: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="evidence-graph" viewBox="0 0 {graph.width} '
        f'{graph.height}" width="{graph.width}" height="{graph.height}" role="img" '
        'aria-labelledby="evidence-graph-title" font-family="system-ui, sans-serif">',
        f'<title id="evidence-graph-title">Evidence graph: {len(graph.nodes)} entities, '
        f"{len(graph.edges)} triples, {len(graph.paths)} seed-to-answer paths</title>",
        "<defs>",
        '<marker id="eg-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>',
        '<marker id="eg-arrow-path" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{PATH_COLOUR}"/></marker>',
        "</defs>",
        '<g class="edges">',
    ]
    # Parallel edges between one pair bend apart; each pair's k-th edge gets its own offset.
    pairs: dict[frozenset[str], list[GraphEdge]] = {}
    for e in graph.edges:
        pairs.setdefault(frozenset((e.head, e.tail)), []).append(e)
    for e in graph.edges:
        a, b = by_name[e.head], by_name[e.tail]
        group = pairs[frozenset((e.head, e.tail))]
        k = group.index(e)
        colour = PATH_COLOUR if e.on_path else _colour(e.step)
        width = 3.0 if e.on_path else 1.4
        marker = "eg-arrow-path" if e.on_path else "eg-arrow"
        classes = (
            "edge" + (" on-path" if e.on_path else "") + (f" step-{e.step}" if e.step is not None else "")
        )
        if a is b:  # a self-loop: a small circle above the node
            r = _radius(a)
            d = f"M{a.x - r / 2:.1f},{a.y - r:.1f} a14,14 0 1,1 {r:.1f},0"
            lx, ly = a.x, a.y - r - 30
        else:
            dx, dy = b.x - a.x, b.y - a.y
            dist = math.hypot(dx, dy) or 1.0
            bend = (k - (len(group) - 1) / 2) * 28.0
            if e.head > e.tail:  # the same side whichever way a triple points
                bend = -bend
            cx, cy = (a.x + b.x) / 2 - dy / dist * bend, (a.y + b.y) / 2 + dx / dist * bend
            # End at the node's rim, not its centre, so the arrowhead shows.
            ex, ey = b.x - cx, b.y - cy
            elen = math.hypot(ex, ey) or 1.0
            rb = _radius(b) + 2
            tx, ty = b.x - ex / elen * rb, b.y - ey / elen * rb
            d = f"M{a.x:.1f},{a.y:.1f} Q{cx:.1f},{cy:.1f} {tx:.1f},{ty:.1f}"
            lx, ly = 0.25 * a.x + 0.5 * cx + 0.25 * b.x, 0.25 * a.y + 0.5 * cy + 0.25 * b.y
        tooltip = f"{e.head} | {e.relation} | {e.tail} (score {e.score:.3f}" + (
            f", step {e.step + 1})" if e.step is not None else ")"
        )
        parts.append(
            f'<g class="{classes}" data-relation="{_attr(e.relation)}" data-head="{_attr(e.head)}" '
            f'data-tail="{_attr(e.tail)}"><title>{_attr(tooltip)}</title>'
            f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}" '
            f'stroke-opacity="{1.0 if e.on_path else 0.75}" marker-end="url(#{marker})"/>'
            f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle" font-size="10" fill="#333" '
            f'stroke="#fff" stroke-width="3" paint-order="stroke">{_attr(_label(e.relation))}</text></g>'
        )
    parts.append("</g>")
    parts.append('<g class="nodes">')
    for n in graph.nodes:
        classes = " ".join(
            ["node"]
            + [name for name, flag in (("seed", n.seed), ("answer", n.answer), ("top", n.top)) if flag]
            + (["on-path"] if n.on_path else [])
            + ([f"step-{n.step}"] if n.step is not None else [])
        )
        roles = [r for r, flag in (("seed", n.seed), ("answer", n.answer), ("top-scored", n.top)) if flag]
        step = f", step {n.step + 1}" if n.step is not None else ""
        tooltip = n.entity + (f" ({', '.join(roles)}{step})" if roles else f" ({step[2:]})" if step else "")
        r = _radius(n)
        dash = ' stroke-dasharray="4 2"' if n.seed and not n.answer else ""
        ring = (
            f'<circle r="{r + 4:.0f}" fill="none" stroke="{PATH_COLOUR if n.answer else "#222"}" '
            f'stroke-width="{3 if n.answer else 2}"{dash}/>'
            if n.seed or n.answer
            else ""
        )
        parts.append(
            f'<g class="{classes}" data-entity="{_attr(n.entity)}" data-step="{"" if n.step is None else n.step}" '
            f'transform="translate({n.x:.1f},{n.y:.1f})"><title>{_attr(tooltip)}</title>{ring}'
            f'<circle r="{r:.0f}" fill="{_colour(n.step)}" stroke="#fff" stroke-width="1.5"/>'
            f'<text y="{r + 15:.0f}" text-anchor="middle" font-size="{13 if n.answer or n.seed else 11}" '
            f'font-weight="{"bold" if n.answer or n.seed or n.top else "normal"}" fill="#111" stroke="#fff" '
            f'stroke-width="3.5" paint-order="stroke">{_attr(_label(n.entity))}</text></g>'
        )
    parts.append("</g></svg>")
    graph.svg = "".join(parts)
    return graph.svg


def evidence_graph(answer: Mapping[str, Any], max_triples: int = 50, top_entities: int = 5) -> EvidenceGraph:
    """The answer's evidence graph, laid out and drawn (``.svg``; ``.to_dict()`` for JSON)."""
    graph = layout(build_graph(answer, max_triples=max_triples, top_entities=top_entities))
    render_svg(graph)
    return graph

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
    # The label's anchor relative to the node and its text-anchor (set by place_labels).
    label_dx: float = 0.0
    label_dy: float = 0.0
    label_anchor: str = "middle"


@dataclass
class GraphEdge:
    """A triple of the graph."""

    head: str
    relation: str
    tail: str
    score: float
    step: int | None = None
    on_path: bool = False
    # The curve (start, control, end) and the label position, set by place_labels.
    curve: tuple[tuple[float, float], tuple[float, float], tuple[float, float]] | None = None
    label_x: float = 0.0
    label_y: float = 0.0
    label_shown: bool = True  # False where every place for the label was crowded


@dataclass
class EvidenceGraph:
    """The laid-out graph and its SVG."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    paths: list[list[str]] = field(default_factory=list)
    width: int = 0
    height: int = 0
    svg: str = ""
    labelled: bool = False  # set by place_labels (render_svg places labels first when it is not)

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
            "hidden_labels": sum(1 for e in self.edges if not e.label_shown),
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


def layout(graph: EvidenceGraph, px_per_node: float = 150.0) -> EvidenceGraph:
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
        # A copy with the nodes in sorted order: a subgraph view of a small component iterates a
        # set of names, whose order changes from process to process (string hashing), and
        # Kamada-Kawai's start positions follow node order, so replicas would draw different pictures.
        sub = nx.Graph()
        sub.add_nodes_from(component)
        sub.add_edges_from(sorted(tuple(sorted(edge)) for edge in g.subgraph(component).edges))
        pos = _component_layout(sub)
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


def _outer_radius(node: GraphNode) -> float:
    """The node's radius with its seed / answer ring."""
    return _radius(node) + (4 if node.seed or node.answer else 0)


def _node_font(node: GraphNode) -> int:
    return 13 if node.answer or node.seed else 11


# -- label placement ---------------------------------------------------------------------------------
EDGE_FONT = 10
# An estimate of a system sans-serif's advance per character (in font sizes): wide enough that
# boxes that do not overlap here do not overlap on screen for ordinary names.
CHAR_WIDTH = 0.6
LOOP_RADIUS = 14.0
# An edge label is left out when its best place would still cover more than this share of its area.
HIDE_LABEL_COVERED = 0.0


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle in SVG user units."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlap(self, other: Box) -> float:
        """The area both boxes cover (0 when they only touch)."""
        w = min(self.x1, other.x1) - max(self.x0, other.x0)
        h = min(self.y1, other.y1) - max(self.y0, other.y0)
        return w * h if w > 0 and h > 0 else 0.0

    def outside(self, width: float, height: float) -> float:
        """The area of the box that lies outside a ``width`` x ``height`` canvas."""
        inside = Box(0.0, 0.0, width, height).overlap(self)
        return (self.x1 - self.x0) * (self.y1 - self.y0) - inside


def text_box(x: float, y: float, text: str, font_size: float, anchor: str = "middle") -> Box:
    """The box a one-line SVG ``<text x y text-anchor>`` covers (``y`` is the baseline), including
    the white halo drawn around the letters."""
    width = len(text) * font_size * CHAR_WIDTH + 3
    x0 = x - width / 2 if anchor == "middle" else x if anchor == "start" else x - width
    return Box(x0, y - font_size * 0.95, x0 + width, y + font_size * 0.3)


def _circle_box(node: GraphNode) -> Box:
    r = _outer_radius(node)
    return Box(node.x - r, node.y - r, node.x + r, node.y + r)


def _node_label_candidates(node: GraphNode) -> list[tuple[float, float, str]]:
    """(dx, dy, text-anchor) of the places a node's label may go: below, above, right, left."""
    r = _outer_radius(node)
    font = _node_font(node)
    return [
        (0.0, r + font + 2, "middle"),
        (0.0, -r - 5, "middle"),
        (r + 4, font * 0.35, "start"),
        (-r - 4, font * 0.35, "end"),
    ]


def _bezier(curve: tuple[tuple[float, float], ...], t: float) -> tuple[float, float]:
    (ax, ay), (cx, cy), (bx, by) = curve
    u = 1 - t
    return u * u * ax + 2 * u * t * cx + t * t * bx, u * u * ay + 2 * u * t * cy + t * t * by


def _edge_curves(graph: EvidenceGraph) -> None:
    """Each edge's quadratic curve: parallel edges between one pair bend apart (the k-th edge of a
    pair gets its own offset, on the same side whichever way a triple points); the curve ends at the
    target's rim, not its centre, so the arrowhead shows. Self-loops get none (drawn as a circle)."""
    by_name = {n.entity: n for n in graph.nodes}
    pairs: dict[frozenset[str], list[GraphEdge]] = {}
    for e in graph.edges:
        pairs.setdefault(frozenset((e.head, e.tail)), []).append(e)
    for e in graph.edges:
        a, b = by_name[e.head], by_name[e.tail]
        if a is b:
            e.curve = None
            continue
        group = pairs[frozenset((e.head, e.tail))]
        dx, dy = b.x - a.x, b.y - a.y
        dist = math.hypot(dx, dy) or 1.0
        bend = (group.index(e) - (len(group) - 1) / 2) * 28.0
        if e.head > e.tail:
            bend = -bend
        cx, cy = (a.x + b.x) / 2 - dy / dist * bend, (a.y + b.y) / 2 + dx / dist * bend
        ex, ey = b.x - cx, b.y - cy
        elen = math.hypot(ex, ey) or 1.0
        rb = _radius(b) + 2
        e.curve = ((a.x, a.y), (cx, cy), (b.x - ex / elen * rb, b.y - ey / elen * rb))


def _edge_label_candidates(edge: GraphEdge, node: GraphNode) -> list[tuple[float, float]]:
    """Baseline points for an edge's label: along its curve from the middle outwards, then just off
    the curve's middle on either side (a self-loop: above its circle)."""
    if edge.curve is None:
        r = _radius(node)
        return [(node.x, node.y - r - 2 * LOOP_RADIUS - 4), (node.x, node.y - r - 2 * LOOP_RADIUS - 16)]
    points = [_bezier(edge.curve, t) for t in (0.5, 0.38, 0.62, 0.28, 0.72, 0.2, 0.8)]
    (ax, ay), _, (bx, by) = edge.curve
    length = math.hypot(bx - ax, by - ay) or 1.0
    nx_, ny_ = -(by - ay) / length, (bx - ax) / length
    mx, my = points[0]
    points += [(mx + nx_ * off, my + ny_ * off) for off in (12.0, -12.0, 22.0, -22.0)]
    return [(x, y + EDGE_FONT * 0.35) for x, y in points]


def _node_label_box(node: GraphNode) -> Box:
    return text_box(
        node.x + node.label_dx,
        node.y + node.label_dy,
        _label(node.entity),
        _node_font(node),
        node.label_anchor,
    )


def _edge_label_box(edge: GraphEdge) -> Box:
    return text_box(edge.label_x, edge.label_y, _label(edge.relation), EDGE_FONT)


def place_labels(graph: EvidenceGraph, search: bool = True) -> EvidenceGraph:
    """Put each label where it covers the least of the labels placed before it, the nodes and the
    canvas edge: node labels first (seeds and answers, then the best-scored), then edge labels
    (seed → answer paths first, then by score). Greedy and deterministic; the first candidate wins
    ties, so an uncrowded graph keeps labels below nodes and on the middle of their edges.
    ``search=False`` puts every label at its first candidate (the naive drawing; a baseline)."""
    _edge_curves(graph)
    circles = [_circle_box(n) for n in graph.nodes]
    own = {n.entity: i for i, n in enumerate(graph.nodes)}
    by_name = {n.entity: n for n in graph.nodes}
    placed: list[Box] = []

    def cost(box: Box, skip: int | None) -> float:
        covered = sum(box.overlap(p) for p in placed)
        covered += sum(box.overlap(c) for i, c in enumerate(circles) if i != skip)
        return covered + 4 * box.outside(graph.width, graph.height)

    def place_node(node: GraphNode) -> None:
        candidates = _node_label_candidates(node)[: None if search else 1]
        best: tuple[float, int, Box] | None = None
        for k, (dx, dy, anchor) in enumerate(candidates):
            node.label_dx, node.label_dy, node.label_anchor = dx, dy, anchor
            box = _node_label_box(node)
            score = cost(box, own[node.entity])
            if best is None or score < best[0] - 1e-6:
                best = (score, k, box)
        assert best is not None
        node.label_dx, node.label_dy, node.label_anchor = candidates[best[1]]
        placed.append(best[2])

    def place_edge(edge: GraphEdge) -> None:
        best: tuple[float, float, float, Box] | None = None
        for x, y in _edge_label_candidates(edge, by_name[edge.head])[: None if search else 1]:
            edge.label_x, edge.label_y = x, y
            box = _edge_label_box(edge)
            score = cost(box, None)
            if best is None or score < best[0] - 1e-6:
                best = (score, x, y, box)
        assert best is not None
        score, edge.label_x, edge.label_y, box = best
        # A relation whose every place covers much of other text is left to the edge's tooltip (and
        # the page's triple list) rather than drawn over what is already there.
        area = (box.x1 - box.x0) * (box.y1 - box.y0)
        edge.label_shown = not search or edge.on_path or score <= HIDE_LABEL_COVERED * area
        if edge.label_shown:
            placed.append(box)

    def rank(n: GraphNode) -> tuple[bool, bool, float, str]:
        return (not (n.seed or n.answer), not n.top, -n.score, n.entity)

    # What a reader looks for first is placed first: the seeds and answers, the seed → answer paths'
    # relations, the best-scored entities, then everything else.
    nodes = sorted(graph.nodes, key=rank)
    key_nodes = [n for n in nodes if n.seed or n.answer]
    for node in key_nodes:
        place_node(node)
    edges = sorted(graph.edges, key=lambda e: (not e.on_path, -e.score))
    for edge in (e for e in edges if e.on_path):
        place_edge(edge)
    for node in nodes[len(key_nodes) :]:
        place_node(node)
    for edge in (e for e in edges if not e.on_path):
        place_edge(edge)
    graph.labelled = True
    return graph


@dataclass(frozen=True)
class Readability:
    """How legible a drawn graph is: label boxes that overlap one another (pairs), label boxes that
    cover a node other than their own, label boxes that leave the canvas, and the scale at which the
    canvas fits a given width (its smallest font size at that scale)."""

    label_overlaps: int
    labels_over_nodes: int
    labels_outside: int
    hidden_edge_labels: int
    fit_scale: float
    smallest_font_px: float

    def to_dict(self) -> dict[str, float | int]:
        """JSON-ready."""
        return dict(self.__dict__)


def readability(graph: EvidenceGraph, fit_width: float = 1120.0, min_overlap: float = 4.0) -> Readability:
    """The legibility of ``graph`` as placed (overlaps under ``min_overlap`` square units, a halo
    touching a halo, do not count); ``fit_width``: the width the page gives the graph on a desktop."""
    labels = [(_node_label_box(n), i) for i, n in enumerate(graph.nodes)]
    labels += [(_edge_label_box(e), None) for e in graph.edges if e.label_shown]
    circles = [_circle_box(n) for n in graph.nodes]
    overlaps = sum(1 for (a, _), (b, _) in itertools.combinations(labels, 2) if a.overlap(b) >= min_overlap)
    over_nodes = sum(
        1
        for box, mine in labels
        if any(box.overlap(c) >= min_overlap for i, c in enumerate(circles) if i != mine)
    )
    outside = sum(1 for box, _ in labels if box.outside(graph.width, graph.height) >= min_overlap)
    scale = min(1.0, fit_width / graph.width) if graph.width else 1.0
    hidden = sum(1 for e in graph.edges if not e.label_shown)
    return Readability(overlaps, over_nodes, outside, hidden, round(scale, 3), round(EDGE_FONT * scale, 1))


def render_svg(graph: EvidenceGraph) -> str:
    """The laid-out, labelled graph as one standalone ``<svg>`` element (all text escaped)."""
    if not graph.labelled:
        place_labels(graph)
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
    labels: list[str] = []  # drawn after all edges, so no edge line crosses a label
    for e in graph.edges:
        a = by_name[e.head]
        colour = PATH_COLOUR if e.on_path else _colour(e.step)
        width = 3.0 if e.on_path else 1.4
        marker = "eg-arrow-path" if e.on_path else "eg-arrow"
        classes = (
            "edge" + (" on-path" if e.on_path else "") + (f" step-{e.step}" if e.step is not None else "")
        )
        if e.curve is None:  # a self-loop: a small circle above the node
            r = _radius(a)
            d = f"M{a.x - r / 2:.1f},{a.y - r:.1f} a{LOOP_RADIUS:g},{LOOP_RADIUS:g} 0 1,1 {r:.1f},0"
        else:
            (sx, sy), (cx, cy), (tx, ty) = e.curve
            d = f"M{sx:.1f},{sy:.1f} Q{cx:.1f},{cy:.1f} {tx:.1f},{ty:.1f}"
        tooltip = f"{e.head} | {e.relation} | {e.tail} (score {e.score:.3f}" + (
            f", step {e.step + 1})" if e.step is not None else ")"
        )
        data = f'data-relation="{_attr(e.relation)}" data-head="{_attr(e.head)}" data-tail="{_attr(e.tail)}"'
        parts.append(
            f'<g class="{classes}" {data}><title>{_attr(tooltip)}</title>'
            f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{width}" '
            f'stroke-opacity="{1.0 if e.on_path else 0.75}" marker-end="url(#{marker})"/></g>'
        )
        if not e.label_shown:
            continue
        labels.append(
            f'<text class="edge-label" {data} x="{e.label_x:.1f}" y="{e.label_y:.1f}" text-anchor="middle" '
            f'font-size="{EDGE_FONT}" fill="#333" stroke="#fff" stroke-width="3" paint-order="stroke">'
            f"<title>{_attr(tooltip)}</title>{_attr(_label(e.relation))}</text>"
        )
    parts.append("</g>")
    parts.append('<g class="edge-labels">' + "".join(labels) + "</g>")
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
            f'<circle r="{_outer_radius(n):.0f}" fill="none" stroke="{PATH_COLOUR if n.answer else "#222"}" '
            f'stroke-width="{3 if n.answer else 2}"{dash}/>'
            if n.seed or n.answer
            else ""
        )
        parts.append(
            f'<g class="{classes}" data-entity="{_attr(n.entity)}" data-step="{"" if n.step is None else n.step}" '
            f'transform="translate({n.x:.1f},{n.y:.1f})"><title>{_attr(tooltip)}</title>{ring}'
            f'<circle r="{r:.0f}" fill="{_colour(n.step)}" stroke="#fff" stroke-width="1.5"/>'
            f'<text x="{n.label_dx:.1f}" y="{n.label_dy:.1f}" text-anchor="{n.label_anchor}" '
            f'font-size="{_node_font(n)}" font-weight="{"bold" if n.answer or n.seed or n.top else "normal"}" '
            f'fill="#111" stroke="#fff" stroke-width="3.5" paint-order="stroke">{_attr(_label(n.entity))}</text></g>'
        )
    parts.append("</g></svg>")
    graph.svg = "".join(parts)
    return graph.svg


def evidence_graph(answer: Mapping[str, Any], max_triples: int = 50, top_entities: int = 5) -> EvidenceGraph:
    """The answer's evidence graph, laid out and drawn (``.svg``; ``.to_dict()`` for JSON)."""
    graph = place_labels(layout(build_graph(answer, max_triples=max_triples, top_entities=top_entities)))
    render_svg(graph)
    return graph

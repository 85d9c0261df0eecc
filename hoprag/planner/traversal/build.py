"""The planner's configured traversals, built from :class:`~hoprag.planner.config.PlannerConfig`."""

from __future__ import annotations

from hoprag.planner.config import PlannerConfig
from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.traversal.astar import AStarTraversal
from hoprag.planner.traversal.base import Traversal
from hoprag.planner.traversal.beam import BeamSearchTraversal
from hoprag.planner.traversal.naive import NaiveTraversal
from hoprag.planner.traversal.retriever import RetrieverTraversal
from hoprag.planner.traversal.water_circles import WaterCirclesTraversal
from hoprag.retrieval.base import Retriever


def build_traversals(
    kg: KnowledgeGraphView, config: PlannerConfig, retriever: Retriever | None = None
) -> list[Traversal]:
    """The configured traversals, in order; ``glm`` needs ``retriever``."""
    out: list[Traversal] = []
    for name in config.traversals:
        if name == "beam":
            b = config.beam
            out.append(
                BeamSearchTraversal(
                    kg, b.depth, b.max_paths, b.alpha, min_similarity=b.min_similarity, theses=config.theses
                )
            )
        elif name == "water_circles":
            w = config.water_circles
            out.append(WaterCirclesTraversal(kg, w.depth, w.chain_quota, w.other_quota, theses=config.theses))
        elif name == "naive":
            out.append(NaiveTraversal(kg, config.naive_top_k, config.naive_weights, theses=config.theses))
        elif name == "astar":
            a = config.astar
            out.append(AStarTraversal(kg, a.max_depth, a.targets, a.max_expansions, theses=config.theses))
        else:
            if retriever is None:
                raise ValueError("traversal 'glm' needs a retriever (pass --retriever RETRIEVER_DIR)")
            out.append(RetrieverTraversal(kg, retriever, top_documents=max(5, config.context_documents)))
    return out

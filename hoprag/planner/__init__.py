"""PAI-2: the iterative search planner over the KG (pure Python; no Ray needed).

Entry points: :class:`Planner` (built by :func:`hoprag.qa.builder.assemble_qa_system`),
:class:`PlannerConfig`, :class:`KnowledgeGraphView`, and the traversals in
:mod:`hoprag.planner.traversal`.
"""

from hoprag.planner.config import PlannerConfig
from hoprag.planner.knowledge import KnowledgeGraphView
from hoprag.planner.planner import Planner
from hoprag.planner.questions import NOT_ENOUGH_INFO, PlannerInputError
from hoprag.planner.trace import Answer

__all__ = ["NOT_ENOUGH_INFO", "Answer", "KnowledgeGraphView", "Planner", "PlannerConfig", "PlannerInputError"]

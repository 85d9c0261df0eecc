"""LLM backends behind one small protocol (:class:`hoprag.llm.base.LLM`)."""

from hoprag.llm.base import LLM, ChatMessage, Completion, GenerationParams, Prompt, PromptStyle

__all__ = ["LLM", "ChatMessage", "Completion", "GenerationParams", "Prompt", "PromptStyle"]

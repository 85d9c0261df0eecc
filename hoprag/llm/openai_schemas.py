"""The OpenAI completions / chat-completions protocol as pydantic models.

One contract for both servers that speak it: the loopback LLM server
(:mod:`hoprag.llm.openai_server`) and the QA app's ingress (:mod:`serving.schemas`, whose chat
request adds hoprag's own fields). Only the subset hoprag reads is modelled; other request fields
are accepted and ignored, as OpenAI-compatible servers do.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag


class ChatTextPart(BaseModel):
    """A text part of a message's content (the only kind hoprag reads)."""

    type: Literal["text"]
    text: str


class ChatOtherPart(BaseModel):
    """Any other content part (image_url, input_audio, ...): accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    type: str


def _part_kind(part: Any) -> str:
    kind = part.get("type") if isinstance(part, dict) else getattr(part, "type", None)
    return "text" if kind == "text" else "other"


def _content_kind(content: Any) -> str:
    return "none" if content is None else "string" if isinstance(content, str) else "parts"


# Tagged unions: a part whose type is "text" must be a valid text part (a text that is not a string
# is a validation error, never a part taken for an ignored kind), and an invalid value gets one
# error, whose location names the branch (e.g. ``messages.0.content.parts.0.text.text``).
ChatContentPart = Annotated[
    Annotated[ChatTextPart, Tag("text")] | Annotated[ChatOtherPart, Tag("other")],
    Discriminator(_part_kind),
]
ChatContent = Annotated[
    Annotated[str, Tag("string")]
    | Annotated[list[ChatContentPart], Tag("parts")]
    | Annotated[None, Tag("none")],
    Discriminator(_content_kind),
]


class ChatMessageIn(BaseModel):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: ChatContent = Field(
        default=None, description="A string, or a list of content parts (only text parts are read)."
    )

    def text(self, separator: str = " ") -> str:
        """The content's text: the string, or the text parts joined with ``separator``."""
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return separator.join(p.text for p in self.content if isinstance(p, ChatTextPart))


class ChatStreamOptions(BaseModel):
    include_usage: bool = Field(default=False, description="Send a last chunk with the token usage.")


class ChatRequestBase(BaseModel):
    """What every chat-completions request carries; other OpenAI fields are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool = Field(
        default=False,
        description="Stream `chat.completion.chunk` events (Server-Sent Events, ending with `[DONE]`).",
    )
    stream_options: ChatStreamOptions | None = Field(
        default=None, description="With stream: `include_usage` adds a usage chunk before `[DONE]`."
    )


class JsonSchemaFormat(BaseModel):
    """``response_format.json_schema``: the schema the answer must follow."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str = Field(default="answer", description="A name for the schema (not used to decode).")
    schema_: dict[str, Any] = Field(alias="schema", description="The JSON schema of the answer.")
    strict: bool | None = Field(default=None, description="Accepted; decoding follows the schema either way.")


class ResponseFormat(BaseModel):
    """``response_format``: free text, any JSON object, or JSON following a schema."""

    type: Literal["text", "json_object", "json_schema"] = Field(description="The answer's form.")
    json_schema: JsonSchemaFormat | None = Field(
        default=None, description="With type json_schema: the schema."
    )


class SamplingFields(BaseModel):
    """The sampling fields an LLM server honours (unset: the server's defaults)."""

    max_tokens: int | None = Field(default=None, ge=1, strict=True, description="New tokens at most.")
    max_completion_tokens: int | None = Field(
        default=None, ge=1, strict=True, description="Newer clients' name for max_tokens (chat)."
    )
    temperature: float | None = Field(default=None, ge=0, description="0: greedy.")
    stop: str | list[str] | None = Field(default=None, description="Stop sequences (cut from the text).")
    n: int | None = Field(default=None, description="Choices per prompt; only 1 is supported.")
    response_format: ResponseFormat | None = Field(
        default=None,
        description="json_schema / json_object: the answer is decoded to follow it where the backend "
        "can constrain decoding (the embedded model), else the schema is passed on as a hint.",
    )


class ChatCompletionsRequest(ChatRequestBase, SamplingFields):
    """``POST /v1/chat/completions`` of an LLM server."""

    model: str = Field(default="", description="Any name; answers carry the served model's.")


class CompletionsRequest(SamplingFields):
    """``POST /v1/completions`` of an LLM server."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(default="", description="Any name; answers carry the served model's.")
    prompt: str | list[str] = Field(description="One prompt, or a list (answered as one choice each).")
    stream: bool = Field(default=False, description="Stream `text_completion` chunks (one prompt only).")
    stream_options: ChatStreamOptions | None = None


class ChatChoice(BaseModel):
    index: int
    message: dict[str, Any]
    finish_reason: str
    logprobs: None = None


class ChatCompletionResponse(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: dict[str, int]

"""Request bodies. Strict types (no "5" for 5, no "yes" for true) and unknown fields refused, so a
typo is a 422 naming the field rather than a silently ignored option. The OpenAI-compatible
body is the exception: its clients send many fields this appliance has no use for."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

DocType = Literal["md", "txt", "html", "pdf", "docx", "image"]
# The hard ceiling of a question's length; the configured one (server.max_question_chars) is checked
# by the routes, which know the settings.
QUESTION_CEILING = 100_000


def _stripped(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty or only whitespace")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class HistoryTurn(_Strict):
    role: Literal["user", "assistant"] = Field(description="user: an earlier question; assistant: its answer.")
    content: str = Field(max_length=QUESTION_CEILING, description="The question, or the answer as it was shown.")


class AskRequest(_Strict):
    question: str = Field(min_length=1, max_length=QUESTION_CEILING, description="The question, in plain words.")
    k: int | None = Field(
        None,
        ge=1,
        le=50,
        description="Most retrieved passages given as sources, each with its window [answer.max_sources].",
    )
    stream: bool = Field(False, description="Answer as Server-Sent Events (also with Accept: text/event-stream).")
    mode: Literal["quoted", "generated"] | None = Field(
        None,
        description="quoted: the documents' own text (the procedure's steps, a value's line), no model; generated: "
        "the local model's short answer, checked [answer.mode].",
    )
    path_prefix: str | None = Field(None, max_length=1024, description="Only documents whose path starts with this.")
    types: list[DocType] | None = Field(None, max_length=6, description="Only these document types.")
    history: list[HistoryTurn] = Field(
        default_factory=list,
        max_length=40,
        description="The conversation so far, oldest first: a follow-up is searched as a standalone question "
        "made from it (setting followup.rewrite). Earlier answers are never used as sources.",
    )

    _strip = field_validator("question")(_stripped)


class SearchRequest(_Strict):
    query: str = Field(min_length=1, max_length=QUESTION_CEILING, description="What to look for.")
    k: int | None = Field(None, ge=1, le=50, description="Hits returned [search.k].")
    mode: Literal["lexical", "dense", "hybrid"] | None = Field(None, description="Retrieval mode [search.mode].")
    path_prefix: str | None = Field(None, max_length=1024, description="Only documents whose path starts with this.")
    types: list[DocType] | None = Field(None, max_length=6, description="Only these document types.")

    _strip = field_validator("query")(_stripped)


class DocumentViewRequest(_Strict):
    chunk_id: str | None = Field(
        None, min_length=1, max_length=128, description="The cited chunk: the view opens at its section (and page)."
    )
    section: str | None = Field(None, max_length=2000, description="Section path to open at, when no chunk is given.")
    page: int | None = Field(None, ge=1, le=1_000_000, description="PDF page to open at, when no chunk is given.")
    sentences: list[Annotated[str, Field(max_length=4000)]] = Field(
        default_factory=list, max_length=20, description="Sentences to highlight (the passage's cited sentences)."
    )


class _Lenient(BaseModel):
    """Strict types, but unknown fields ignored: OpenAI clients send many options the appliance has no use for."""

    model_config = ConfigDict(strict=True, extra="ignore")


class ContentPart(_Lenient):
    type: str
    text: str | None = None


class ChatMessageIn(_Lenient):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return ""
        return "\n".join(part.text for part in self.content if part.type == "text" and part.text)


class ChatCompletionRequest(_Lenient):
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=200)
    model: str | None = Field(None, max_length=256)
    stream: bool = False


class FeedbackRequest(_Strict):
    request_id: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9._:-]+$",
        description="The rated answer's request_id (in its JSON body, the stream's done event, or X-Request-ID).",
    )
    rating: Literal["up", "down"] = Field(description="up: the answer helped; down: it did not.")
    reason: Literal["wrong", "incomplete", "outdated", "unclear", "other"] | None = Field(
        None, description="Why it did not help (with rating down)."
    )
    comment: str | None = Field(
        None,
        max_length=2000,
        description="A remark; the audit log keeps only its first characters (audit.question_preview_chars) "
        "and its sha256, like a question.",
    )


class TokenCreateRequest(_Strict):
    role: Literal["operator", "admin"] = Field(description="operator: ask, search, open, feedback; admin: all.")
    name: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$",
        description="A unique name, shown in the audit log [default: ROLE-ID]; never reused, even after revocation.",
    )

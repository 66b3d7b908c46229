"""``POST /v1/ask``: a question answered from the caller's notes, with exact citations."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, Field

from grove_contracts.notes import NOT_BLANK, PassageSource, Strict

MAX_ASK_QUERY_CHARS = 6000
MAX_PREVIOUS_QUESTIONS = 4

AskStatus = Literal["answered", "no_evidence", "disabled", "searched"]
AnswerFormat = Literal["plain", "markdown"]


def _trimmed_question(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("must not be empty")
    if len(value) > MAX_ASK_QUERY_CHARS:
        raise ValueError(f"must be at most {MAX_ASK_QUERY_CHARS} characters after trimming")
    return value


Question = Annotated[str, AfterValidator(_trimmed_question), Field(json_schema_extra=NOT_BLANK)]


class AskRequest(Strict):
    """Ask a question of the notes the caller may read.

    ``projectId`` omitted searches every granted notebook (plus personal notes unless
    ``includePersonal`` is false); ``null`` searches personal notes only; a notebook ID
    searches that notebook (plus personal notes when ``includePersonal`` is true).
    ``mode: search`` returns the ranked sources without writing an answer.
    """

    query: Question
    projectId: UUID | None = None
    includePersonal: bool | None = None
    previousQuestions: Annotated[
        list[Question], Field(default_factory=list, max_length=MAX_PREVIOUS_QUESTIONS)
    ]
    mode: Literal["answer", "search"] = "answer"
    format: AnswerFormat = "plain"


class Citation(BaseModel):
    """A verbatim span of one revision: ``quote == content[start:end]`` of that version.

    ``revisionId`` is ``"<noteId>:<version>"``: revisions are identified by note and
    version. Offsets count Unicode code points, ``end`` exclusive.
    """

    noteId: UUID
    revisionId: str
    version: int
    quote: str
    start: int
    end: int


class Answer(BaseModel):
    """The answer text, what wrote it, and the citations that back it."""

    text: str
    format: AnswerFormat
    generator: str
    citations: list[Citation]


class Source(BaseModel):
    """One note revision used as evidence, best first; a passage of a file cites it in
    ``file``."""

    noteId: UUID
    version: int
    content: str
    kind: str
    projectId: UUID | None
    score: float | None = None
    file: PassageSource | None = None


class AskResponse(BaseModel):
    """``status`` says whether ``answer`` holds text; ``sources`` is the evidence.

    ``answered``: an answer with its citations. ``no_evidence``: nothing in scope
    answers the question (``answer`` is null). ``disabled``: answering is switched off.
    ``searched``: ``mode: search`` was asked, ``sources`` only.
    """

    status: AskStatus
    answer: Answer | None
    sources: list[Source]

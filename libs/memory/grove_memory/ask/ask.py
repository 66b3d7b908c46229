"""Ask: answer a question from the caller's notes, every citation checked exactly.

Evidence is the caller's hybrid retrieval (BM25 fused with MiniLM similarity, as in
recall) within the requested scope: the best ``EVIDENCE_NOTES`` notes, each at its
current version, read in one short tenant transaction. The answer is generated after
that transaction has ended, by the ask service's ``Answer``. Before replying, every
citation is verified: the cited (note, version) must be one the evidence held, and its
quote must be exactly ``content[start:end]`` of that revision; any other citation is
dropped and counted. An answer left with no citation is not given (``no_evidence``).
Neither the question nor the answer is ever stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from prometheus_client import Counter

from grove_auth.principal import Principal
from grove_contracts.ask import AskRequest, AskResponse
from grove_db.pool import Conn, transaction
from grove_memory.errors import ServiceError
from grove_memory.inference import (
    GONE,
    TIMEOUT,
    EvidenceText,
    Generated,
    InferenceError,
    QuotedSpan,
)
from grove_memory.rows import passage_of
from grove_memory.scope import check_notebook, in_notebook
from grove_memory.search.recall import (
    Candidate,
    QueryVector,
    above_floor,
    fuse,
    lexical_candidates,
    query_vector,
    semantic_candidates,
)
from grove_memory.store import Store, require
from grove_telemetry import metrics

#: Notes given to the generator as evidence, best first.
EVIDENCE_NOTES = 8
#: Candidates taken from each retrieval signal before fusion.
CANDIDATES = EVIDENCE_NOTES * 4

CITATIONS_DROPPED = Counter(
    "grove_ask_citations_dropped",
    "Citations of a generated answer dropped because they failed verification, by reason.",
    ["service", "reason"],
)
#: Every ``reason`` of ``CITATIONS_DROPPED`` (see ``_citation_problem``).
DROP_REASONS = ("unknown_revision", "quote_mismatch")


def init_metrics() -> None:
    """Create the dropped-citations series at 0, so they are exported before any drop."""
    for reason in DROP_REASONS:
        CITATIONS_DROPPED.labels(metrics.service(), reason)


class InferenceUnavailable(ServiceError):
    """The answering service cannot be reached right now; try again shortly."""

    code = "inference_unavailable"
    status = 503


class InferenceTimeout(ServiceError):
    """The answering service did not answer in time; try again shortly."""

    code = "inference_timeout"
    status = 504


class ClientGone(ServiceError):
    """The client closed the connection before the answer was ready; nothing was sent."""

    code = "client_closed_request"
    status = 499


class Answerer(Protocol):
    """Writes a cited answer from evidence (the ask service's ``Answer``)."""

    def answer(
        self,
        question: str,
        previous: Sequence[str],
        evidence: Sequence[EvidenceText],
        *,
        markdown: bool,
        timeout: float,
        notebooks: Sequence[tuple[str, str]] = (),
    ) -> Generated:
        """The answer, or ``InferenceError`` (``disabled``, ``inference_timeout``, ...).

        ``notebooks`` (id, name) are the ones in scope that proposals may file notes into.
        """
        ...

    def describe(self, *, timeout: float) -> str:
        """The generator and settings it answers with now (``Generated.configuration``)."""
        ...


def ask(
    store: Store, answerer: Answerer, principal: Principal, req: AskRequest, timeout: float
) -> AskResponse:
    """Retrieve evidence in scope, then (outside any transaction) answer from it."""
    require(principal, "read")
    sources = find_sources(store, principal, req)
    if not sources:
        return _reply("no_evidence", None, sources)
    if req.mode == "search":
        return _reply("searched", None, sources)
    evidence = [EvidenceText(s["noteId"], s["version"], s["content"]) for s in sources]
    markdown = req.format == "markdown"
    generated = generate(answerer, req.query, req.previousQuestions, evidence, markdown, timeout)
    if generated is None:
        return _reply("disabled", None, sources)
    citations = verify_citations(generated.citations, evidence)
    if not generated.text or not citations:
        return _reply("no_evidence", None, sources)
    answer = {
        "text": generated.text,
        "format": "markdown" if generated.markdown else "plain",
        "generator": generated.generator,
        "citations": citations,
    }
    return _reply("answered", answer, sources)


def verify_citations(
    citations: Sequence[QuotedSpan], evidence: Sequence[EvidenceText]
) -> list[dict[str, Any]]:
    """The citations that quote a revision in ``evidence`` exactly, as wire objects.

    Each failing citation is dropped and counted in ``grove_ask_citations_dropped_total``
    (``reason``: ``unknown_revision`` or ``quote_mismatch``).
    """
    contents = {(e.note_id, e.version): e.content for e in evidence}
    kept = []
    for citation in citations:
        reason = _citation_problem(citation, contents.get((citation.note_id, citation.version)))
        if reason:
            CITATIONS_DROPPED.labels(metrics.service(), reason).inc()
            continue
        kept.append(
            {
                "noteId": citation.note_id,
                "revisionId": f"{citation.note_id}:{citation.version}",
                "version": citation.version,
                "quote": citation.quote,
                "start": citation.start,
                "end": citation.end,
            }
        )
    return kept


def _citation_problem(citation: QuotedSpan, content: str | None) -> str | None:
    if content is None:
        return "unknown_revision"
    in_bounds = 0 <= citation.start < citation.end <= len(content)
    if not in_bounds or content[citation.start : citation.end] != citation.quote:
        return "quote_mismatch"
    return None


def generate(
    answerer: Answerer,
    question: str,
    previous: Sequence[str],
    evidence: Sequence[EvidenceText],
    markdown: bool,
    timeout: float,
    *,
    notebooks: Sequence[tuple[str, str]] = (),
) -> Generated | None:
    """``Answer``'s reply, or None when answering is disabled in the ask service.

    ``notebooks`` (id, name) are passed on for proposals. A missed deadline raises
    ``InferenceTimeout`` (504), a client that went away ``ClientGone`` (499, the call
    cancelled), any other failure ``InferenceUnavailable`` (503).
    """
    try:
        return answerer.answer(
            question, previous, evidence, markdown=markdown, timeout=timeout, notebooks=notebooks
        )
    except InferenceError as ex:
        if ex.reason == "disabled":
            return None
        raise _failed(ex) from ex


def configuration(answerer: Answerer, timeout: float) -> str:
    """The generator settings the ask service answers with now (``Describe``); its
    failures are ``generate``'s."""
    try:
        return answerer.describe(timeout=timeout)
    except InferenceError as ex:
        raise _failed(ex) from ex


def _failed(ex: InferenceError) -> ServiceError:
    """The service error of a failed inference call: 504, 499 or 503."""
    if ex.reason == TIMEOUT:
        return InferenceTimeout()
    if ex.reason == GONE:
        return ClientGone()
    return InferenceUnavailable()


def find_sources(store: Store, principal: Principal, req: AskRequest) -> list[dict[str, Any]]:
    """The best notes in ``req``'s scope as sources (with content), best first: fused from
    BM25 and MiniLM similarity in one transaction."""
    scope, values = scope_predicate(req)
    vector = query_vector(store, req.query)  # before the transaction: no connection waits
    with transaction(store.pool, principal.account_id) as conn:
        if "projectId" in req.model_fields_set:
            check_notebook(conn, principal, req.projectId)
        found = _ranked(conn, store, principal, req.query, vector, scope, values)
    return [_source(candidate) for candidate in found]


def _ranked(
    conn: Conn,
    store: Store,
    principal: Principal,
    query: str,
    vector: QueryVector,
    scope: str,
    values: dict[str, Any],
) -> list[Candidate]:
    lexical = above_floor(lexical_candidates(conn, principal, query, scope, values))
    semantic = semantic_candidates(conn, store, principal, vector, scope, values)
    return fuse(lexical, semantic, store.lexical_weight)[:EVIDENCE_NOTES]


def scope_predicate(req: AskRequest) -> tuple[str, dict[str, Any]]:
    """The scope predicate: omitted ``projectId`` is every granted scope, null personal."""
    values: dict[str, Any] = {"limit": CANDIDATES}
    if "projectId" not in req.model_fields_set:
        personal = req.includePersonal is not False
        return ("true" if personal else "m.project_id IS NOT NULL"), values
    values["project_id"] = req.projectId
    if req.projectId is not None and req.includePersonal:
        return "(m.project_id = %(project_id)s OR m.project_id IS NULL)", values
    return in_notebook(req.projectId), values


def _source(candidate: Candidate) -> dict[str, Any]:
    row = candidate.row
    return {
        "noteId": str(row["id"]),
        "version": row["version"],
        "content": row["content"],
        "kind": row["kind"],
        "projectId": None if row["project_id"] is None else str(row["project_id"]),
        "score": round(candidate.score, 6),
        "file": None if (file := passage_of(row)) is None else file.model_dump(mode="json"),
    }


def _reply(
    status: str, answer: dict[str, Any] | None, sources: list[dict[str, Any]]
) -> AskResponse:
    return AskResponse.model_validate({"status": status, "answer": answer, "sources": sources})

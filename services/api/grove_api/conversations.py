"""``/v1/conversations``: an owner's durable conversations with cited answers."""

from __future__ import annotations

from uuid import UUID

import falcon

from grove_api.ask import watching
from grove_api.body import read_json, read_query
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_contracts.conversations import (
    Conversation,
    ConversationDetail,
    ConversationList,
    ConversationListQuery,
    ConversationSearchPage,
    ConversationSearchRequest,
    CreateConversationRequest,
    DeletedConversation,
    TurnReply,
    TurnRequest,
)
from grove_contracts.proposals import ProposalActionRequest, ProposalOutcome
from grove_memory.ask import ask, conversations, proposals, turns

#: What ``POST /v1/conversations/{id}/proposals/{proposalId}/{action}`` may do.
PROPOSAL_ACTIONS = {"apply": proposals.apply, "undo": proposals.undo}


class Conversations(Resource):
    """``POST /v1/conversations`` (201, or 200 for a retry) and ``GET`` (30 a page)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateConversationRequest, self.max_body)
        created, fresh = conversations.create_conversation(self.store, req.context.principal, body)
        ok(resp, created, 201 if fresh else 200)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, ConversationListQuery)
        page = conversations.list_conversations(self.store, req.context.principal, query.after)
        ok(resp, page)


class Search(Resource):
    """``POST /v1/conversations/search``: titles and questions, the query in the body."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, ConversationSearchRequest, self.max_body)
        page = conversations.search_conversations(self.store, req.context.principal, body)
        ok(resp, page)


class ConversationResource(Resource):
    """``GET /v1/conversations/{id}`` (with its turns) and ``DELETE`` (hidden, retained)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, conversation_id: UUID) -> None:
        found = conversations.get_conversation(self.store, req.context.principal, conversation_id)
        ok(resp, found)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, conversation_id: UUID) -> None:
        deleted = conversations.delete_conversation(
            self.store, req.context.principal, conversation_id
        )
        ok(resp, deleted)


class Turns(Resource):
    """``POST /v1/conversations/{id}/turns``: 201 when answered now, 200 for a replay.

    Turns count against the account's ask limits (``grove_api.ask.AskLimiter``).
    """

    ask_limited = True

    def on_post(self, req: falcon.Request, resp: falcon.Response, conversation_id: UUID) -> None:
        body = read_json(req, TurnRequest, self.max_body)
        if self.answerer is None:
            raise ask.InferenceUnavailable("no answering service is configured")
        with watching(req):
            reply, fresh = turns.add_turn(
                self.store,
                self.answerer,
                req.context.principal,
                conversation_id,
                body,
                self.answer_timeout,
            )
        ok(resp, reply, 201 if fresh else 200)


class ProposalAction(Resource):
    """``POST /v1/conversations/{id}/proposals/{proposalId}/{apply|undo}`` (owner session,
    body ``{}``): the change as previewed, or put back; 409 ``proposal_stale`` when
    anything it touches changed since."""

    def on_post(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        conversation_id: UUID,
        proposal_id: UUID,
        action: str,
    ) -> None:
        act = PROPOSAL_ACTIONS.get(action)
        if act is None:
            raise falcon.HTTPNotFound()
        read_json(req, ProposalActionRequest, self.max_body)
        done = act(self.store, req.context.principal, conversation_id, proposal_id)
        ok(resp, done)


PROPOSAL_FLOW = (
    "A completed turn may carry `proposals` (see `Turn`). `apply` writes the change in one"
    " transaction, only if every note is still at the version and every notebook subtree"
    " still has the fingerprint its `preview` shows (else 409 `proposal_stale`, nothing"
    " written). `undo` puts back the previous state with new revisions, fenced the same way"
    " on what the apply left; a deletion cannot be undone (409 `not_undoable`). Applying"
    " (or undoing) twice returns the first result. Owner session only."
)


ROUTES: tuple[Route, ...] = (
    Route(
        Conversations,
        (
            Operation(
                "POST",
                "/v1/conversations",
                "Start a conversation (a retry with the same body returns it)",
                Conversation,
                body=CreateConversationRequest,
                status=201,
                also=(200,),
                errors=(404, 409, 410),
                creates={"conversation_id": "/id"},
                auth="owner",
            ),
            Operation(
                "GET",
                "/v1/conversations",
                "List conversations, newest first",
                ConversationList,
                query=ConversationListQuery,
                auth="owner",
            ),
        ),
    ),
    Route(
        Search,
        (
            Operation(
                "POST",
                "/v1/conversations/search",
                "Search conversation titles and questions",
                ConversationSearchPage,
                body=ConversationSearchRequest,
                auth="owner",
            ),
        ),
    ),
    Route(
        ConversationResource,
        (
            Operation(
                "GET",
                "/v1/conversations/{conversation_id:uuid}",
                "A conversation with all of its turns",
                ConversationDetail,
                auth="owner",
            ),
            Operation(
                "DELETE",
                "/v1/conversations/{conversation_id:uuid}",
                "Delete (hide) a conversation",
                DeletedConversation,
                auth="owner",
            ),
        ),
    ),
    Route(
        Turns,
        (
            Operation(
                "POST",
                "/v1/conversations/{conversation_id:uuid}/turns",
                "Ask the next question of a conversation",
                TurnReply,
                body=TurnRequest,
                status=201,
                also=(200,),
                errors=(409, 499, 504),
                auth="owner",
            ),
        ),
    ),
    Route(
        ProposalAction,
        (
            Operation(
                "POST",
                "/v1/conversations/{conversation_id:uuid}/proposals/{proposal_id:uuid}/{action}",
                "Apply a turn's proposal as previewed, or undo it",
                ProposalOutcome,
                body=ProposalActionRequest,
                errors=(409,),
                auth="owner",
                path_values={"action": tuple(PROPOSAL_ACTIONS)},
                description=PROPOSAL_FLOW,
            ),
        ),
    ),
)

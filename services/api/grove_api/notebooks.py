"""``/v1/notebooks``: notebooks, their subtrees (preview, archive, restore, delete),
briefs and suggestions."""

from __future__ import annotations

from typing import cast
from uuid import UUID

import falcon

from grove_api.body import operation_id, read_json, read_query
from grove_api.resources import Resource, ok
from grove_api.routing import Operation, Route
from grove_contracts.enrichment import NotebookBrief, SuggestionPage, SuggestionQuery
from grove_contracts.notebooks import (
    ArchivedNotebookList,
    CreateNotebookRequest,
    Notebook,
    NotebookList,
    NotebookListQuery,
    SubtreeConfirmation,
    SubtreePreview,
    SubtreeResult,
)
from grove_memory.enrichment import enrichment
from grove_memory.notes import notebooks, subtrees
from grove_memory.notes.subtrees import APPLY


class Notebooks(Resource):
    """``POST`` and ``GET /v1/notebooks``."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = read_json(req, CreateNotebookRequest, self.max_body)
        body = body.model_copy(update={"operationId": operation_id(req, body.operationId)})
        notebook, created = notebooks.create_notebook(self.store, req.context.principal, body)
        ok(resp, notebook, 201 if created else 200)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, NotebookListQuery)
        ok(resp, notebooks.list_notebooks(self.store, req.context.principal, query))


class SubtreePreviewResource(Resource):
    """``GET /v1/notebooks/{id}/subtree``: counts and fingerprint (owner session)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID) -> None:
        ok(resp, subtrees.preview(self.store, req.context.principal, notebook_id))


class Brief(Resource):
    """``GET /v1/notebooks/{id}/brief``: the notebook's cited brief (enrichment)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID) -> None:
        ok(resp, enrichment.read_brief(self.store, req.context.principal, notebook_id))


class Suggestions(Resource):
    """``GET /v1/suggestions``: where unfiled notes might belong (enrichment)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = read_query(req, SuggestionQuery)
        ok(resp, enrichment.list_suggestions(self.store, req.context.principal, query))


class SubtreeAction(Resource):
    """``POST /v1/notebooks/{id}/{archive|restore|delete}`` with the preview's fingerprint."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, notebook_id: UUID, action: str
    ) -> None:
        if action not in subtrees.APPLY:
            raise falcon.HTTPNotFound()
        body = read_json(req, SubtreeConfirmation, self.max_body)
        done = subtrees.apply(
            self.store,
            req.context.principal,
            notebook_id,
            cast(subtrees.Action, action),
            body.fingerprint,
        )
        ok(resp, done)


class ArchivedNotebooks(Resource):
    """``GET /v1/notebooks/archived`` (owner session)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ok(resp, subtrees.list_archived(self.store, req.context.principal))


ROUTES: tuple[Route, ...] = (
    Route(
        Notebooks,
        (
            Operation(
                "POST",
                "/v1/notebooks",
                "Create a notebook",
                Notebook,
                body=CreateNotebookRequest,
                status=201,
                also=(200,),
                errors=(404, 409),
                creates={"notebook_id": "/id"},
            ),
            Operation(
                "GET",
                "/v1/notebooks",
                "List the notebooks this credential may use",
                NotebookList,
                query=NotebookListQuery,
                errors=(404,),
            ),
        ),
    ),
    Route(
        ArchivedNotebooks,
        (
            Operation(
                "GET",
                "/v1/notebooks/archived",
                "List archived notebooks",
                ArchivedNotebookList,
                auth="owner",
            ),
        ),
    ),
    Route(
        SubtreePreviewResource,
        (
            Operation(
                "GET",
                "/v1/notebooks/{notebook_id:uuid}/subtree",
                "Preview archiving, restoring or deleting a notebook's subtree",
                SubtreePreview,
                auth="owner",
            ),
        ),
    ),
    Route(
        Brief,
        (
            Operation(
                "GET",
                "/v1/notebooks/{notebook_id:uuid}/brief",
                "Read a notebook's brief: a short summary quoting its notes",
                NotebookBrief,
            ),
        ),
    ),
    Route(
        Suggestions,
        (
            Operation(
                "GET",
                "/v1/suggestions",
                "List suggested notebooks and kinds for notes saved without a notebook",
                SuggestionPage,
                query=SuggestionQuery,
            ),
        ),
    ),
    Route(
        SubtreeAction,
        (
            Operation(
                "POST",
                "/v1/notebooks/{notebook_id:uuid}/{action}",
                "Archive, restore or delete a notebook's subtree as previewed",
                SubtreeResult,
                body=SubtreeConfirmation,
                errors=(409,),
                auth="owner",
                path_values={"action": tuple(APPLY)},
            ),
        ),
    ),
)

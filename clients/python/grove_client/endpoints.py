"""Every route the client calls, as the API's OpenAPI document names it.

The client makes no request that is not in ``ENDPOINTS``, so the drift test, which
checks each one (path, method and response model) against the running API's
``/v1/openapi.json``, covers all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel

from grove_client import models

#: How a call is made idempotent: an ``Idempotency-Key`` header, an ``operationId`` on
#: each item of the body (a batch refuses the header), the ``id`` the body gives the
#: resource (conversations and their turns), the ``id`` the query gives it (an import),
#: the resource's own state (applying or undoing a proposal twice answers the first
#: result), or not at all (reads; mutations the API does not record, such as restore).
Idempotency = Literal["header", "items", "body", "query", "state", "none"]


@dataclass(frozen=True)
class Endpoint:
    """One method on one route, and what its success answer's ``data`` holds."""

    method: str
    path: str
    #: The model of ``data``; None for an answer that is not an envelope (the export).
    response: type[BaseModel] | None
    idempotency: Idempotency = "none"
    #: Whether the call may be resent after the connection failed mid-request: reads
    #: and idempotent mutations may; a mutation the API does not record may not.
    resend: bool = True

    def url(self, **parameters: object) -> str:
        """The path with its parameters filled in, each escaped."""
        return self.path.format(**{k: quote(str(v), safe="") for k, v in parameters.items()})


REMEMBER = Endpoint("POST", "/v1/memories", models.SavedMemory, "header")
LIST = Endpoint("GET", "/v1/memories", models.MemoryPage)
BATCH = Endpoint("POST", "/v1/memories/batch", models.BatchResult, "items")
SEARCH = Endpoint("POST", "/v1/memories/search", models.SearchPage)
FORGET = Endpoint("POST", "/v1/memories/forget", models.ForgetResponse, "header")
GET = Endpoint("GET", "/v1/memories/{memory_id}", models.Memory)
UPDATE = Endpoint("PATCH", "/v1/memories/{memory_id}", models.Memory, "header")
REVISIONS = Endpoint("GET", "/v1/memories/{memory_id}/revisions", models.RevisionPage)
RESTORE = Endpoint("POST", "/v1/memories/{memory_id}/restore", models.Memory, resend=False)
RECALL = Endpoint("POST", "/v1/recall", models.RecallResult)
ASK = Endpoint("POST", "/v1/ask", models.AskResult)
EXPORT = Endpoint("GET", "/v1/export", None)
CREATE_NOTEBOOK = Endpoint("POST", "/v1/notebooks", models.Notebook, "header")
NOTEBOOKS = Endpoint("GET", "/v1/notebooks", models.NotebookList)
ARCHIVED_NOTEBOOKS = Endpoint("GET", "/v1/notebooks/archived", models.ArchivedNotebookList)
SUBTREE = Endpoint("GET", "/v1/notebooks/{notebook_id}/subtree", models.SubtreePreview)
# Not resent after a lost answer: the second apply would find the fingerprint changed
# (409) and hide that the first one worked.
SUBTREE_ACTION = Endpoint(
    "POST", "/v1/notebooks/{notebook_id}/{action}", models.SubtreeResult, resend=False
)
CREATE_CONVERSATION = Endpoint("POST", "/v1/conversations", models.Conversation, "body")
CONVERSATIONS = Endpoint("GET", "/v1/conversations", models.ConversationList)
SEARCH_CONVERSATIONS = Endpoint("POST", "/v1/conversations/search", models.ConversationSearchPage)
CONVERSATION = Endpoint("GET", "/v1/conversations/{conversation_id}", models.ConversationDetail)
DELETE_CONVERSATION = Endpoint(
    "DELETE", "/v1/conversations/{conversation_id}", models.DeletedConversation, resend=False
)
ADD_TURN = Endpoint("POST", "/v1/conversations/{conversation_id}/turns", models.TurnReply, "body")
# Applying or undoing twice answers the first result, so a lost answer is resent.
PROPOSAL_ACTION = Endpoint(
    "POST",
    "/v1/conversations/{conversation_id}/proposals/{proposal_id}/{action}",
    models.ProposalOutcome,
    "state",
)
# The import's ``id`` (a query parameter, made once per call) resumes it when resent.
IMPORT = Endpoint("POST", "/v1/import", models.ImportStatus, "query")
IMPORT_STATUS = Endpoint("GET", "/v1/import/{import_id}", models.ImportStatus)
CREATE_SHARE = Endpoint("POST", "/v1/shares", models.CreatedShare, resend=False)
SHARES = Endpoint("GET", "/v1/shares", models.ShareList)
REVOKE_SHARE = Endpoint("DELETE", "/v1/shares/{share_id}", models.Share, resend=False)
# Connections and API keys (owner session). The API keeps no idempotency record of
# these, so none is resent after a lost answer (a second create would make a second key).
CONNECTIONS = Endpoint("GET", "/v1/connections", models.ConnectionList)
UPDATE_CONNECTION = Endpoint(
    "PATCH", "/v1/connections/{connection_id}", models.Connection, resend=False
)
REVOKE_CONNECTION = Endpoint(
    "DELETE", "/v1/connections/{connection_id}", models.Connection, resend=False
)
CREATE_KEY = Endpoint("POST", "/v1/keys", models.CreatedKey, resend=False)
KEYS = Endpoint("GET", "/v1/keys", models.ApiKeyList)
REVOKE_KEY = Endpoint("DELETE", "/v1/keys/{key_id}", models.Connection, resend=False)
# Orgs, projects and project keys (owner session). None of the writes is recorded for
# idempotency, so none is resent after a lost answer (a second create makes a second).
ORGS = Endpoint("GET", "/v1/orgs", models.OrgList)
CREATE_ORG = Endpoint("POST", "/v1/orgs", models.Org, resend=False)
ORG = Endpoint("GET", "/v1/orgs/{org_id}", models.Org)
PROJECTS = Endpoint("GET", "/v1/orgs/{org_id}/projects", models.ProjectList)
CREATE_PROJECT = Endpoint("POST", "/v1/orgs/{org_id}/projects", models.Project, resend=False)
PROJECT = "/v1/orgs/{org_id}/projects/{project_id}"
PROJECT_KEYS = Endpoint("GET", PROJECT + "/keys", models.ProjectKeyList)
CREATE_PROJECT_KEY = Endpoint("POST", PROJECT + "/keys", models.CreatedProjectKey, resend=False)
REVOKE_PROJECT_KEY = Endpoint(
    "DELETE", PROJECT + "/keys/{key_id}", models.RevokedProjectKey, resend=False
)
# A project's shared pool (project key or owner session). The API records none of its
# writes for idempotency (no ``Idempotency-Key``), so writes and deletes are not resent
# after a lost answer: a second write would add a version, a second delete answer 404.
POOL = PROJECT + "/memory"
POOL_STATUS = Endpoint("GET", POOL + "/status", models.PoolStatus)
POOL_RECORDS = Endpoint("GET", POOL, models.RecordPage)
POOL_GET = Endpoint("GET", POOL + "/entry", models.RecordReply)
POOL_WRITE = Endpoint("PUT", POOL + "/entry", models.RecordReply, resend=False)
POOL_DELETE = Endpoint("DELETE", POOL + "/entry", models.DeletedRecord, resend=False)
POOL_RETRIEVE = Endpoint("POST", POOL + "/retrieve", models.RetrieveResult)

ENDPOINTS: tuple[Endpoint, ...] = (
    REMEMBER,
    LIST,
    BATCH,
    SEARCH,
    FORGET,
    GET,
    UPDATE,
    REVISIONS,
    RESTORE,
    RECALL,
    ASK,
    EXPORT,
    CREATE_NOTEBOOK,
    NOTEBOOKS,
    ARCHIVED_NOTEBOOKS,
    SUBTREE,
    SUBTREE_ACTION,
    CREATE_CONVERSATION,
    CONVERSATIONS,
    SEARCH_CONVERSATIONS,
    CONVERSATION,
    DELETE_CONVERSATION,
    ADD_TURN,
    PROPOSAL_ACTION,
    IMPORT,
    IMPORT_STATUS,
    CREATE_SHARE,
    SHARES,
    REVOKE_SHARE,
    CONNECTIONS,
    UPDATE_CONNECTION,
    REVOKE_CONNECTION,
    CREATE_KEY,
    KEYS,
    REVOKE_KEY,
    ORGS,
    CREATE_ORG,
    ORG,
    PROJECTS,
    CREATE_PROJECT,
    PROJECT_KEYS,
    CREATE_PROJECT_KEY,
    REVOKE_PROJECT_KEY,
    POOL_STATUS,
    POOL_RECORDS,
    POOL_GET,
    POOL_WRITE,
    POOL_DELETE,
    POOL_RETRIEVE,
)

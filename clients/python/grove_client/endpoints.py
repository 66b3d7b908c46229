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
#: result), or not at all (reads; mutations the API does not record, such as a subtree action).
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
ACTIVITY = Endpoint("GET", "/v1/activity", models.ActivityPage)
DUPLICATES = Endpoint("GET", "/v1/duplicates", models.DuplicateList)
RESTORE = Endpoint("POST", "/v1/memories/{memory_id}/restore", models.Memory, "header")
RECALL = Endpoint("POST", "/v1/recall", models.RecallResult)
ASK = Endpoint("POST", "/v1/ask", models.AskResult)
EXPORT = Endpoint("GET", "/v1/export", None)
CREATE_NOTEBOOK = Endpoint("POST", "/v1/notebooks", models.Notebook, "header")
NOTEBOOKS = Endpoint("GET", "/v1/notebooks", models.NotebookList)
ARCHIVED_NOTEBOOKS = Endpoint("GET", "/v1/notebooks/archived", models.ArchivedNotebookList)
SUBTREE = Endpoint("GET", "/v1/notebooks/{notebook_id}/subtree", models.SubtreePreview)
BRIEF = Endpoint("GET", "/v1/notebooks/{notebook_id}/brief", models.NotebookBrief)
SUGGESTIONS = Endpoint("GET", "/v1/suggestions", models.SuggestionPage)
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
# Files. An upload's body is the file; its ``operationId`` goes as the
# ``Idempotency-Key`` header, so a resent upload returns the first result. A second
# delete would answer 404, hiding that the first worked, so a delete is not resent.
UPLOAD_FILE = Endpoint("POST", "/v1/files", models.StoredFile, "header")
FILES = Endpoint("GET", "/v1/files", models.FilePage)
FILE = Endpoint("GET", "/v1/files/{file_id}", models.StoredFile)
UPLOAD_FILE_VERSION = Endpoint("POST", "/v1/files/{file_id}", models.StoredFile, "header")
UPDATE_FILE = Endpoint("PATCH", "/v1/files/{file_id}", models.StoredFile, "header")
DELETE_FILE = Endpoint("DELETE", "/v1/files/{file_id}", models.DeletedFile, resend=False)
FILE_ORIGINAL = Endpoint("GET", "/v1/files/{file_id}/original", None)
STORAGE = Endpoint("GET", "/v1/storage", models.Storage)
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
CONNECTION_REQUEST = Endpoint(
    "GET", "/v1/connections/requests/{request_id}", models.ConnectionRequest
)
# A request answered once is no longer pending: a resent answer would be refused.
APPROVE_REQUEST = Endpoint(
    "POST", "/v1/connections/requests/{request_id}/approve", models.Connection, resend=False
)
DENY_REQUEST = Endpoint(
    "POST", "/v1/connections/requests/{request_id}/deny", models.Connection, resend=False
)
CREATE_KEY = Endpoint("POST", "/v1/keys", models.CreatedKey, resend=False)
KEYS = Endpoint("GET", "/v1/keys", models.ApiKeyList)
REVOKE_KEY = Endpoint("DELETE", "/v1/keys/{key_id}", models.Connection, resend=False)
# Deleting the account revokes the session that asked: a resend could only fail.
DELETE_ACCOUNT = Endpoint("DELETE", "/v1/account", models.DeletedAccount, resend=False)
# Orgs, projects and project keys (owner session). None of the writes is recorded for
# idempotency, so none is resent after a lost answer (a second create makes a second).
ORGS = Endpoint("GET", "/v1/orgs", models.OrgList)
CREATE_ORG = Endpoint("POST", "/v1/orgs", models.Org, resend=False)
ORG = Endpoint("GET", "/v1/orgs/{org_id}", models.Org)
# Setting entitlements, or a member's role, to a value twice answers the same state.
UPDATE_ORG = Endpoint("PATCH", "/v1/orgs/{org_id}", models.Org, "state")
PROJECTS = Endpoint("GET", "/v1/orgs/{org_id}/projects", models.ProjectList)
CREATE_PROJECT = Endpoint("POST", "/v1/orgs/{org_id}/projects", models.Project, resend=False)
PROJECT = "/v1/orgs/{org_id}/projects/{project_id}"
PROJECT_KEYS = Endpoint("GET", PROJECT + "/keys", models.ProjectKeyList)
CREATE_PROJECT_KEY = Endpoint("POST", PROJECT + "/keys", models.CreatedProjectKey, resend=False)
REVOKE_PROJECT_KEY = Endpoint(
    "DELETE", PROJECT + "/keys/{key_id}", models.RevokedProjectKey, resend=False
)
MEMBERS = Endpoint("GET", PROJECT + "/members", models.MemberList)
ADD_MEMBER = Endpoint("POST", PROJECT + "/members", models.Member, "state")
UPDATE_MEMBER = Endpoint("PUT", PROJECT + "/members/{account_id}", models.Member, "state")
REMOVE_MEMBER = Endpoint(
    "DELETE", PROJECT + "/members/{account_id}", models.RemovedMember, resend=False
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
# The agent tool registry. A tool may write, and the API records no call, so a call is
# not resent after a lost answer.
TOOLS = Endpoint("GET", "/v1/tools", models.ToolList)
CALL_TOOL = Endpoint("POST", "/v1/tools/{tool}", models.ToolOutput, resend=False)

ENDPOINTS: tuple[Endpoint, ...] = (
    REMEMBER,
    LIST,
    ACTIVITY,
    DUPLICATES,
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
    BRIEF,
    SUGGESTIONS,
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
    UPLOAD_FILE,
    FILES,
    FILE,
    UPLOAD_FILE_VERSION,
    UPDATE_FILE,
    DELETE_FILE,
    FILE_ORIGINAL,
    STORAGE,
    CREATE_SHARE,
    SHARES,
    REVOKE_SHARE,
    CONNECTIONS,
    UPDATE_CONNECTION,
    REVOKE_CONNECTION,
    CONNECTION_REQUEST,
    APPROVE_REQUEST,
    DENY_REQUEST,
    CREATE_KEY,
    KEYS,
    REVOKE_KEY,
    DELETE_ACCOUNT,
    ORGS,
    CREATE_ORG,
    ORG,
    UPDATE_ORG,
    PROJECTS,
    CREATE_PROJECT,
    PROJECT_KEYS,
    CREATE_PROJECT_KEY,
    REVOKE_PROJECT_KEY,
    MEMBERS,
    ADD_MEMBER,
    UPDATE_MEMBER,
    REMOVE_MEMBER,
    POOL_STATUS,
    POOL_RECORDS,
    POOL_GET,
    POOL_WRITE,
    POOL_DELETE,
    POOL_RETRIEVE,
    TOOLS,
    CALL_TOOL,
)

#: Each operation of the API's document that the client does not call, and why: a
#: library user has no use for it (or cannot use it). The coverage test fails on any
#: other operation that is neither here nor in ``ENDPOINTS``.
EXCLUDED: dict[tuple[str, str], str] = {
    ("GET", "/healthz"): "a liveness probe for load balancers, answered without an envelope",
    ("GET", "/readyz"): "a readiness probe for load balancers, answered without an envelope",
    ("GET", "/v1/openapi.json"): "the document itself, which the drift tests read",
    ("GET", "/.well-known/openai-apps-challenge"): "a domain check for OpenAI's app review",
    ("HEAD", "/.well-known/openai-apps-challenge"): "a domain check for OpenAI's app review",
    ("GET", "/.well-known/oauth-protected-resource/mcp"): "OAuth discovery for MCP clients",
    ("GET", "/dev-issuer/jwks"): "the development issuer's keys, for token verifiers",
    ("GET", "/dev-issuer/.well-known/openid-configuration"): "the development issuer's"
    " discovery document, for OAuth clients",
}

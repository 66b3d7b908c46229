"""Proposals on conversation turns, applied and undone over real HTTP against real
PostgreSQL and a real grove-ask (extractive; no embeddings, so the deterministic
proposer compares notes lexically).

The deterministic proposer's merges and handoff archives arrive with turns over REST.
Proposals of the other kinds come from the model in production; here they are offered
with ``grove_memory.ask.proposals.prepare`` and ``store_proposals`` (what a completing turn
calls) on a turn made over REST, and then applied and undone over REST.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import requests
from psycopg.types.json import Jsonb

from grove_contracts.proposals import MAX_DUPLICATE_GROUPS, MAX_MERGE_NOTES, ProposalDraft
from grove_db.pool import transaction
from grove_memory.ask import cleanup, proposals, proposer
from grove_memory.ask.conversations import conversation_row
from grove_memory.store import Store
from tests.support.clients import Client, data_of, error_of
from tests.support.conversations import Owner, Stack, new_owner, owner, stack, store
from tests.support.owners import AUDIENCE

__all__ = ["owner", "stack", "store"]  # the fixtures tests name

DEPLOY = "We deploy the billing service with Argo CD every Tuesday morning."
DEPLOY_AGAIN = "Every Tuesday morning we deploy the billing service with Argo CD. Ask Priya first."
PLANT = "The office plant needs water on Fridays."


def ask(owner: Owner, query: str, **create: Any) -> tuple[str, dict[str, Any]]:
    """A new conversation and its first completed turn."""
    conversation = owner.create(**create)["id"]
    return conversation, owner.answered(conversation, query, 1)["turn"]


def offer(
    owner: Owner,
    store: Store,
    change: dict[str, Any],
    query: str = "Tidy up my notes",
    **create: Any,
) -> tuple[str, dict[str, Any]]:
    """A turn over REST, then ``change`` offered on it as a completing turn offers a
    model's proposal; the conversation and the proposal as the owner reads it."""
    conversation, turn = ask(owner, query, **create)
    draft = ProposalDraft.model_validate({"summary": "A proposed change", "change": change})
    principal = owner.principal()
    with transaction(store.pool, principal.account_id) as conn:
        row = conversation_row(conn, principal.account_id, uuid.UUID(conversation))
        assert row is not None
        given = [uuid.UUID(s["noteId"]) for s in turn["sources"]]
        scope = proposals.scope_of(row, turn["context"], given)
        prepared = proposals.prepare(conn, principal, scope, [("model", draft)])
        assert prepared, "the change does not apply to the notes as they are"
        proposals.store_proposals(conn, principal, row["id"], uuid.UUID(turn["id"]), prepared)
    return conversation, only_proposal(owner, conversation)


def only_proposal(owner: Owner, conversation: str) -> dict[str, Any]:
    (turn,) = data_of(owner.get(conversation))["turns"]
    (proposal,) = turn["proposals"]
    return proposal  # type: ignore[no-any-return]


def act(
    owner: Owner,
    conversation: str,
    proposal: dict[str, Any],
    action: str,
    client: Client | None = None,
) -> requests.Response:
    caller = client or owner.session
    return caller.post(f"/v1/conversations/{conversation}/proposals/{proposal['id']}/{action}", {})


def done(owner: Owner, conversation: str, proposal: dict[str, Any], action: str) -> dict[str, Any]:
    response = act(owner, conversation, proposal, action)
    assert response.status_code == 200, response.text
    return data_of(response)  # type: ignore[no-any-return]


def stale(owner: Owner, conversation: str, proposal: dict[str, Any], action: str) -> dict[str, Any]:
    response = act(owner, conversation, proposal, action)
    assert response.status_code == 409, response.text
    error = error_of(response)
    assert error["code"] == "proposal_stale", error
    return error


def note(owner: Owner, note_id: str) -> dict[str, Any]:
    return data_of(owner.key.get(f"/v1/memories/{note_id}"))  # type: ignore[no-any-return]


def versions(owner: Owner, note_id: str) -> list[dict[str, Any]]:
    return data_of(owner.key.get(f"/v1/memories/{note_id}/revisions"))["items"]  # type: ignore[no-any-return]


def notebook(owner: Owner, notebook_id: str) -> dict[str, Any]:
    found = data_of(owner.session.get(f"/v1/notebooks/{notebook_id}/subtree"))
    return found  # type: ignore[no-any-return]


# --- the deterministic proposer ---------------------------------------------------------


def test_a_turn_offers_to_merge_near_duplicates_and_apply_and_undo_round_trip(owner: Owner) -> None:
    deploys = owner.tenant.notebook("deploys")
    older = owner.key.save(DEPLOY, projectId=deploys)
    newer = owner.key.save(DEPLOY_AGAIN, projectId=deploys)
    elsewhere = owner.key.save(DEPLOY)  # the same words in another scope: never merged
    owner.key.save(PLANT, projectId=deploys)
    conversation, turn = ask(owner, "When do we deploy the billing service?")
    merges = [p for p in turn["proposals"] if p["change"]["action"] == "merge"]
    assert len(merges) == 1, turn["proposals"]
    (merge,) = merges
    change = merge["change"]
    assert merge["source"] == "deterministic" and merge["state"] == "proposed"
    assert set(change["noteIds"]) == {older["id"], newer["id"]}
    assert change["into"] == newer["id"]  # the freshest note survives
    assert change["content"] == DEPLOY_AGAIN  # the older note says nothing new
    assert [(n["id"], n["version"]) for n in merge["preview"]["notes"]] == [
        (i, 1) for i in change["noteIds"]
    ]
    assert merge["preview"]["undoable"] is True and elsewhere["id"] not in change["noteIds"]

    applied = done(owner, conversation, merge, "apply")
    assert applied["proposal"]["state"] == "applied"
    assert {(n["id"], n["outcome"]) for n in applied["notes"]} == {
        (newer["id"], "updated"),
        (older["id"], "archived"),
    }
    assert note(owner, older["id"])["archived"] is True
    survivor = note(owner, newer["id"])
    assert (survivor["version"], survivor["content"]) == (2, DEPLOY_AGAIN)
    (event,) = applied["proposal"]["events"]
    assert (event["action"], event["result"], event["by"]) == ("apply", "applied", owner.subject)
    assert done(owner, conversation, merge, "apply")["notes"] == applied["notes"]  # idempotent

    undone = done(owner, conversation, merge, "undo")
    assert undone["proposal"]["state"] == "undone"
    assert note(owner, older["id"])["archived"] is False
    back = note(owner, newer["id"])
    assert (back["version"], back["content"]) == (3, DEPLOY_AGAIN)  # a new revision
    assert [r["version"] for r in versions(owner, newer["id"])] == [1, 2, 3]
    assert done(owner, conversation, merge, "undo")["notes"] == undone["notes"]
    again = act(owner, conversation, merge, "apply")
    assert again.status_code == 409 and error_of(again)["code"] == "proposal_undone"
    events = only_merge(owner, conversation)["events"]
    assert [(e["action"], e["result"]) for e in events] == [
        ("apply", "applied"),
        ("undo", "undone"),
    ]


def test_a_change_offered_once_is_not_offered_again_in_the_conversation(owner: Owner) -> None:
    deploys = owner.tenant.notebook("deploys")
    owner.key.save(DEPLOY, projectId=deploys)
    owner.key.save(DEPLOY_AGAIN, projectId=deploys)
    query = "When do we deploy the billing service?"
    conversation, turn = ask(owner, query)
    assert [p["change"]["action"] for p in turn["proposals"]] == ["merge"]
    # The same notes again: left alone once, the merge is not offered on every turn.
    again = owner.answered(conversation, query, 2)["turn"]
    assert again["sources"] == turn["sources"] and again["proposals"] == []
    # A new conversation has not seen it.
    assert [p["change"]["action"] for p in ask(owner, query)[1]["proposals"]] == ["merge"]


def only_merge(owner: Owner, conversation: str) -> dict[str, Any]:
    (turn,) = data_of(owner.get(conversation))["turns"]
    return next(p for p in turn["proposals"] if p["change"]["action"] == "merge")


def test_a_merge_keeps_what_only_the_older_note_says(owner: Owner) -> None:
    older = owner.key.save(DEPLOY + " Rollbacks go through the release channel.")
    newer = owner.key.save(DEPLOY_AGAIN)
    conversation, turn = ask(owner, "When do we deploy the billing service?")
    (merge,) = [p for p in turn["proposals"] if p["change"]["action"] == "merge"]
    assert merge["change"]["into"] == newer["id"]
    assert merge["change"]["content"] == (
        DEPLOY_AGAIN + "\nRollbacks go through the release channel."
    )
    done(owner, conversation, merge, "apply")
    assert "Rollbacks" in note(owner, newer["id"])["content"]
    assert note(owner, older["id"])["archived"] is True


def test_handoffs_about_to_expire_are_offered_for_archiving(owner: Owner) -> None:
    soon = owner.key.save(
        "Handoff: finish the billing deploy checklist.",
        kind="handoff",
        taskId="t1",
        retentionDays=2,
    )
    later = owner.key.save(
        "Handoff: review the billing deploy dashboards.", kind="handoff", taskId="t2"
    )
    conversation, turn = ask(owner, "What is left on the billing deploy?")
    archives = [p for p in turn["proposals"] if p["change"]["action"] == "archive"]
    assert [p["change"]["noteIds"] for p in archives] == [[soon["id"]]], turn["proposals"]
    done(owner, conversation, archives[0], "apply")
    assert note(owner, soon["id"])["archived"] is True
    assert note(owner, later["id"])["archived"] is False
    done(owner, conversation, archives[0], "undo")
    assert note(owner, soon["id"])["archived"] is False


# --- every kind, applied and undone -----------------------------------------------------


def test_edit_applies_against_the_version_read_and_undoes_to_the_exact_state(
    owner: Owner, store: Store
) -> None:
    billing = owner.tenant.notebook("billing")
    saved = owner.key.save(DEPLOY, kind="decision", retentionDays=30)
    change = {
        "action": "edit",
        "noteId": saved["id"],
        "content": "We deploy billing on Wednesdays.",
        "kind": "fact",
        "retentionDays": 90,
        "moveTo": {"projectId": billing},
    }
    conversation, proposal = offer(owner, store, change)
    assert proposal["preview"]["notes"] == [
        {
            "id": saved["id"],
            "version": 1,
            "firstLine": DEPLOY,
            "projectId": None,
            "archived": False,
        }
    ]
    applied = done(owner, conversation, proposal, "apply")
    assert applied["notes"] == [{"id": saved["id"], "outcome": "updated", "version": 2}]
    edited = note(owner, saved["id"])
    assert (edited["content"], edited["kind"], edited["retentionDays"], edited["projectId"]) == (
        "We deploy billing on Wednesdays.",
        "fact",
        90,
        billing,
    )
    done(owner, conversation, proposal, "undo")
    back = note(owner, saved["id"])
    assert (back["content"], back["kind"], back["retentionDays"], back["projectId"]) == (
        DEPLOY,
        "decision",
        30,
        None,
    )
    assert back["expiresAt"] == saved["expiresAt"] and back["version"] == 3
    # The key saved version 1; the owner applied the edit (2) and undid it (3).
    assert saved["savedBy"]["kind"] == "connection"
    assert (edited["savedBy"]["kind"], back["savedBy"]["kind"]) == ("owner", "owner")


def test_create_applies_and_undo_archives_the_new_note(owner: Owner, store: Store) -> None:
    owner.key.save(DEPLOY)
    change = {"action": "create", "content": "Priya approves billing deploys.", "kind": "fact"}
    conversation, proposal = offer(owner, store, change)
    assert proposal["preview"] == {"notes": [], "notebooks": [], "undoable": True}
    applied = done(owner, conversation, proposal, "apply")
    ((created_id, outcome),) = [(n["id"], n["outcome"]) for n in applied["notes"]]
    assert outcome == "created"
    created = note(owner, created_id)
    assert created["content"] == "Priya approves billing deploys."
    assert created["savedBy"]["kind"] == "owner"  # applied by the owner
    assert created["provenance"] == {
        "sourceAgent": "grove-proposals",
        "sourceRef": f"conversation:{conversation}",
    }
    undone = done(owner, conversation, proposal, "undo")
    assert undone["notes"] == [{"id": created_id, "outcome": "archived", "version": 1}]
    assert note(owner, created_id)["archived"] is True


def test_merge_into_a_new_note_archives_the_originals_and_undo_brings_them_back(
    owner: Owner, store: Store
) -> None:
    a = owner.key.save(DEPLOY)
    b = owner.key.save("Billing deploys need Priya's approval.")
    change = {
        "action": "merge",
        "noteIds": [a["id"], b["id"]],
        "content": "Billing deploys run on Tuesdays with Argo CD, approved by Priya.",
        "kind": "decision",
    }
    conversation, proposal = offer(owner, store, change)
    applied = done(owner, conversation, proposal, "apply")
    outcomes = {n["outcome"]: n["id"] for n in applied["notes"] if n["outcome"] == "created"}
    merged = note(owner, outcomes["created"])
    assert (merged["kind"], merged["projectId"]) == ("decision", None)
    assert note(owner, a["id"])["archived"] and note(owner, b["id"])["archived"]
    done(owner, conversation, proposal, "undo")
    assert not note(owner, a["id"])["archived"] and not note(owner, b["id"])["archived"]
    assert note(owner, merged["id"])["archived"] is True


def test_organize_moves_notes_and_notebooks_into_a_new_notebook_and_undo_moves_back(
    owner: Owner, store: Store
) -> None:
    ops = owner.tenant.notebook("ops")
    runbooks = owner.tenant.notebook("runbooks")
    a = owner.key.save(DEPLOY)
    b = owner.key.save(PLANT, projectId=ops)
    change = {
        "action": "organize",
        "noteIds": [a["id"], b["id"]],
        "notebookIds": [runbooks],
        "destination": {"newNotebook": {"name": "Billing", "parentId": ops}},
    }
    conversation, proposal = offer(owner, store, change)
    assert [t["id"] for t in proposal["preview"]["notebooks"]] == [runbooks]
    applied = done(owner, conversation, proposal, "apply")
    billing = next(n for n in applied["notebooks"] if n != runbooks)
    assert note(owner, a["id"])["projectId"] == billing
    assert note(owner, b["id"])["projectId"] == billing
    tree = data_of(owner.key.get(f"/v1/notebooks?parentId={billing}"))["items"]
    assert [t["id"] for t in tree] == [runbooks]
    assert notebook(owner, billing)["notes"] == 2
    done(owner, conversation, proposal, "undo")
    assert note(owner, a["id"])["projectId"] is None
    assert note(owner, b["id"])["projectId"] == ops
    tops = {n["id"] for n in data_of(owner.key.get("/v1/notebooks?root=true"))["items"]}
    assert runbooks in tops
    assert owner.session.get(f"/v1/notebooks/{billing}/subtree").status_code == 404


def test_archive_and_restore_of_notes_and_subtrees_undo_exactly(owner: Owner, store: Store) -> None:
    ops = owner.tenant.notebook("ops")
    inside = owner.key.save(PLANT, projectId=ops)
    set_aside = owner.key.save("Old pager rota.", projectId=ops)
    owner.key.post("/v1/tools/archive_memories", {"ids": [set_aside["id"]]})
    loose = owner.key.save(DEPLOY)
    change = {"action": "archive", "noteIds": [loose["id"]], "notebookIds": [ops]}
    conversation, proposal = offer(owner, store, change)
    (tree,) = proposal["preview"]["notebooks"]
    assert (tree["notebooks"], tree["notes"]) == (1, 2)
    assert tree["fingerprint"] == notebook(owner, ops)["fingerprint"]
    done(owner, conversation, proposal, "apply")
    assert note(owner, loose["id"])["archived"] and note(owner, inside["id"])["archived"]
    archived = data_of(owner.session.get("/v1/notebooks/archived"))["items"]
    assert [n["id"] for n in archived] == [ops]
    done(owner, conversation, proposal, "undo")
    assert not note(owner, loose["id"])["archived"] and not note(owner, inside["id"])["archived"]
    assert note(owner, set_aside["id"])["archived"] is True  # archived on its own before
    assert data_of(owner.session.get("/v1/notebooks/archived"))["items"] == []

    owner.key.post("/v1/tools/archive_memories", {"ids": [loose["id"]]})
    restore = {"action": "restore", "noteIds": [loose["id"], set_aside["id"]], "notebookIds": []}
    conversation, proposal = offer(owner, store, restore)
    done(owner, conversation, proposal, "apply")
    assert not note(owner, loose["id"])["archived"] and not note(owner, set_aside["id"])["archived"]
    done(owner, conversation, proposal, "undo")
    assert note(owner, loose["id"])["archived"] and note(owner, set_aside["id"])["archived"]


def test_delete_applies_once_and_cannot_be_undone(owner: Owner, store: Store) -> None:
    ops = owner.tenant.notebook("ops")
    inside = owner.key.save(PLANT, projectId=ops)
    loose = owner.key.save(DEPLOY)
    change = {"action": "delete", "noteIds": [loose["id"]], "notebookIds": [ops]}
    conversation, proposal = offer(owner, store, change)
    assert proposal["preview"]["undoable"] is False
    applied = done(owner, conversation, proposal, "apply")
    assert applied["notes"] == [{"id": loose["id"], "outcome": "deleted", "version": 1}]
    for gone in (loose["id"], inside["id"]):
        assert owner.key.get(f"/v1/memories/{gone}").status_code == 404
    assert owner.session.get(f"/v1/notebooks/{ops}/subtree").status_code == 404
    refused = act(owner, conversation, proposal, "undo")
    assert refused.status_code == 409 and error_of(refused)["code"] == "not_undoable"


def test_undo_before_apply_is_refused(owner: Owner, store: Store) -> None:
    saved = owner.key.save(DEPLOY)
    change = {"action": "archive", "noteIds": [saved["id"]], "notebookIds": []}
    conversation, proposal = offer(owner, store, change)
    refused = act(owner, conversation, proposal, "undo")
    assert refused.status_code == 409 and error_of(refused)["code"] == "proposal_not_applied"


# --- fences -----------------------------------------------------------------------------


def test_an_edit_after_the_preview_makes_apply_stale_and_nothing_is_written(
    owner: Owner, store: Store
) -> None:
    a = owner.key.save(DEPLOY)
    b = owner.key.save(PLANT)
    change = {"action": "merge", "noteIds": [a["id"], b["id"]], "into": a["id"], "content": "x y"}
    conversation, proposal = offer(owner, store, change)
    edited = owner.key.patch(f"/v1/memories/{b['id']}", {"content": "Water the plant on Mondays."})
    assert edited.status_code == 200
    error = stale(owner, conversation, proposal, "apply")
    assert [d["message"] for d in error["details"]] == [
        f"note {b['id']}: now at version 2, proposed at version 1"
    ]
    assert note(owner, a["id"])["version"] == 1 and not note(owner, b["id"])["archived"]
    stored = only_proposal(owner, conversation)
    assert stored["state"] == "proposed"
    assert [(e["action"], e["result"]) for e in stored["events"]] == [("apply", "stale")]


def test_a_note_moved_after_the_preview_makes_apply_stale(owner: Owner, store: Store) -> None:
    saved = owner.key.save(DEPLOY)
    ops = owner.tenant.notebook("ops")
    change = {"action": "archive", "noteIds": [saved["id"]], "notebookIds": []}
    conversation, proposal = offer(owner, store, change)
    moved = owner.key.post("/v1/tools/move_memories", {"ids": [saved["id"]], "projectId": ops})
    assert moved.status_code == 200, moved.text
    stale(owner, conversation, proposal, "apply")
    assert note(owner, saved["id"])["archived"] is False


def test_a_note_archived_after_the_preview_makes_apply_stale(owner: Owner, store: Store) -> None:
    saved = owner.key.save(DEPLOY)
    change = {"action": "edit", "noteId": saved["id"], "content": "Deploys moved to Thursday."}
    conversation, proposal = offer(owner, store, change)
    owner.key.post("/v1/tools/archive_memories", {"ids": [saved["id"]]})
    error = stale(owner, conversation, proposal, "apply")
    assert error["details"][0]["message"] == f"note {saved['id']} is archived"


def test_a_subtree_changed_after_the_preview_makes_apply_stale(owner: Owner, store: Store) -> None:
    ops = owner.tenant.notebook("ops")
    owner.key.save(PLANT, projectId=ops)
    change = {"action": "archive", "noteIds": [], "notebookIds": [ops]}
    conversation, proposal = offer(owner, store, change)
    late = owner.key.save("A note filed after the preview.", projectId=ops)
    error = stale(owner, conversation, proposal, "apply")
    assert error["details"] == [
        {"field": "proposal", "message": f"notebook {ops}: something in its subtree changed"}
    ]
    assert note(owner, late["id"])["archived"] is False
    assert data_of(owner.session.get("/v1/notebooks/archived"))["items"] == []


def test_undo_after_a_later_edit_is_stale(owner: Owner, store: Store) -> None:
    saved = owner.key.save(DEPLOY)
    change = {"action": "edit", "noteId": saved["id"], "content": "Deploys moved to Thursday."}
    conversation, proposal = offer(owner, store, change)
    done(owner, conversation, proposal, "apply")
    owner.key.patch(f"/v1/memories/{saved['id']}", {"content": "Deploys moved to Friday."})
    stale(owner, conversation, proposal, "undo")
    assert note(owner, saved["id"])["content"] == "Deploys moved to Friday."
    assert only_proposal(owner, conversation)["state"] == "applied"


def test_undo_of_a_subtree_archive_is_stale_after_a_restore_elsewhere(
    owner: Owner, store: Store
) -> None:
    ops = owner.tenant.notebook("ops")
    inside = owner.key.save(PLANT, projectId=ops)
    change = {"action": "archive", "noteIds": [], "notebookIds": [ops]}
    conversation, proposal = offer(owner, store, change)
    done(owner, conversation, proposal, "apply")
    owner.key.post("/v1/tools/restore_memory", {"id": inside["id"]})
    stale(owner, conversation, proposal, "undo")


# --- scope and who may apply -------------------------------------------------------------


def test_keys_agents_and_other_accounts_cannot_apply(
    owner: Owner, store: Store, stack: Stack
) -> None:
    saved = owner.key.save(DEPLOY)
    change = {"action": "archive", "noteIds": [saved["id"]], "notebookIds": []}
    conversation, proposal = offer(owner, store, change)
    agent = Client(
        stack.api.url, stack.provider.token(owner.subject, aud=AUDIENCE, client_id="claude-desktop")
    )
    for caller in (owner.key, agent):
        for action in ("apply", "undo"):
            refused = act(owner, conversation, proposal, action, caller)
            assert refused.status_code == 403, refused.text
            assert error_of(refused)["code"] in ("owner_session_required", "connection_required")
    intruder = new_owner(stack)
    for action in ("apply", "undo"):
        missing = act(owner, conversation, proposal, action, intruder.session)
        assert missing.status_code == 404, missing.text
    assert note(owner, saved["id"])["archived"] is False
    unknown = act(owner, conversation, {"id": str(uuid.uuid4())}, "apply")
    assert unknown.status_code == 404
    other = owner.session.post(
        f"/v1/conversations/{conversation}/proposals/{proposal['id']}/redo", {}
    )
    assert other.status_code == 404
    body = owner.session.post(
        f"/v1/conversations/{conversation}/proposals/{proposal['id']}/apply", {"force": True}
    )
    assert body.status_code == 400 and error_of(body)["code"] == "validation_error"


def test_proposals_outside_the_conversation_scope_are_dropped_and_refused_at_apply(
    owner: Owner, store: Store, stack: Stack
) -> None:
    billing = owner.tenant.notebook("billing")
    ops = owner.tenant.notebook("ops")
    inside = owner.key.save(DEPLOY, projectId=billing)
    outside = owner.key.save(PLANT, projectId=ops)
    conversation, turn = ask(owner, "When do we deploy?", projectId=billing)
    principal = owner.principal()
    with transaction(store.pool, principal.account_id) as conn:
        row = conversation_row(conn, principal.account_id, uuid.UUID(conversation))
        assert row is not None
        scope = proposals.scope_of(row, None, [])
        drafts = [
            {"action": "archive", "noteIds": [outside["id"]], "notebookIds": []},
            {"action": "archive", "noteIds": [], "notebookIds": [billing]},
            {"action": "create", "content": "A note in ops.", "kind": "fact", "projectId": ops},
            {"action": "archive", "noteIds": [inside["id"]], "notebookIds": []},
            # Personal notes are outside a one-notebook conversation: a new note the model
            # left without a notebook goes in the conversation's.
            {"action": "create", "content": "A note in billing.", "kind": "fact"},
        ]
        kept = proposals.prepare(
            conn,
            principal,
            scope,
            [("model", ProposalDraft(summary="s", change=d)) for d in drafts],  # type: ignore[arg-type]
        )
    assert [k.draft.change.model_dump(mode="json") for k in kept] == [
        {"action": "archive", "noteIds": [inside["id"]], "notebookIds": []},
        {
            "action": "create",
            "content": "A note in billing.",
            "kind": "fact",
            "projectId": billing,
        },
    ]
    # A stored proposal naming a note outside the scope (written around prepare) is
    # refused when applied, and writes nothing.
    with psycopg.connect(stack.database.grove_superuser_url) as conn:
        conn.execute(
            "INSERT INTO turn_proposals (account_id, conversation_id, turn_id, id, ordinal,"
            " source, summary, change, preview) VALUES (%s, %s, %s, %s, 1, 'model', 's', %s, %s)",
            (
                owner.tenant.account_id,
                conversation,
                turn["id"],
                proposal_id := uuid.uuid4(),
                Jsonb({"action": "archive", "noteIds": [outside["id"]], "notebookIds": []}),
                Jsonb(
                    {
                        "notes": [
                            {
                                "id": outside["id"],
                                "version": 1,
                                "firstLine": PLANT,
                                "projectId": ops,
                                "archived": False,
                            }
                        ],
                        "notebooks": [],
                        "undoable": True,
                    }
                ),
            ),
        )
    refused = act(owner, conversation, {"id": str(proposal_id)}, "apply")
    assert refused.status_code == 403 and error_of(refused)["code"] == "proposal_out_of_scope"
    assert note(owner, outside["id"])["archived"] is False


def test_a_strict_context_turn_only_proposes_changes_to_its_selected_notes(
    owner: Owner, store: Store
) -> None:
    a = owner.key.save(DEPLOY)
    b = owner.key.save(DEPLOY_AGAIN)
    c = owner.key.save(DEPLOY + " Also on Thursdays.")
    conversation = owner.create()["id"]
    context = {"notes": [a["id"], b["id"]], "only": True}
    turn = owner.answered(conversation, "When do we deploy?", 1, context=context)["turn"]
    merges = [p for p in turn["proposals"] if p["change"]["action"] == "merge"]
    assert [set(p["change"]["noteIds"]) for p in merges] == [{a["id"], b["id"]}]
    principal = owner.principal()
    with transaction(store.pool, principal.account_id) as conn:
        row = conversation_row(conn, principal.account_id, uuid.UUID(conversation))
        assert row is not None
        scope = proposals.scope_of(row, turn["context"], [a["id"], b["id"]])
        change = {"action": "archive", "noteIds": [c["id"]], "notebookIds": []}
        draft = ProposalDraft.model_validate({"summary": "s", "change": change})
        assert proposals.prepare(conn, principal, scope, [("model", draft)]) == []


def test_the_export_carries_proposals_and_their_events(owner: Owner, store: Store) -> None:
    saved = owner.key.save(DEPLOY)
    change = {"action": "archive", "noteIds": [saved["id"]], "notebookIds": []}
    conversation, proposal = offer(owner, store, change)
    done(owner, conversation, proposal, "apply")
    export = owner.session.get("/v1/export")
    assert export.status_code == 200
    lines = [json.loads(line) for line in export.text.splitlines()]
    (exported,) = [line for line in lines if line.get("type") == "conversation"]
    (turn,) = exported["turns"]
    (stored,) = turn["proposals"]
    assert stored["id"] == proposal["id"] and stored["state"] == "applied"
    assert [e["result"] for e in stored["events"]] == ["applied"]
    assert "applied" not in stored and "outcome" not in stored  # the undo's notes stay inside


def test_the_proposer_uses_the_indexed_vectors_when_both_notes_have_them(
    owner: Owner, store: Store, stack: Stack
) -> None:
    a = owner.key.save(DEPLOY)
    b = owner.key.save(DEPLOY_AGAIN)
    ids = [uuid.UUID(a["id"]), uuid.UUID(b["id"])]

    def suggested(second: list[float]) -> list[str]:
        with psycopg.connect(stack.database.grove_superuser_url) as conn:
            conn.execute("DELETE FROM embeddings WHERE memory_id = ANY(%s)", (ids,))
            for note, vector in zip(ids, ([1.0, 0.0, 0.0], second), strict=True):
                conn.execute(
                    "INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions,"
                    " embedding) VALUES (%s, %s, 1, 'probe', 3, %s::vector)",
                    (owner.tenant.account_id, note, str(vector)),
                )
        probe = Store(pool=store.pool, cursor_secret=b"x", profile="probe")
        principal = owner.principal()
        with transaction(store.pool, principal.account_id) as conn:
            drafts = proposer.suggest(conn, probe, principal, ids)
        return [d.change.action for d in drafts]

    # The words say "same", so the vectors decide: far apart, no merge; close, a merge.
    assert suggested([0.0, 1.0, 0.0]) == []
    assert suggested([0.9, 0.1, 0.0]) == ["merge"]


# --- the whole scope: the duplicates listing and clean-up questions ----------------------

STANDUP = "The team standup is at 9:30 every weekday in the blue room."
STANDUP_AGAIN = "Every weekday the team standup is at 9:30 in the blue room."


def duplicate_groups(client: Client) -> list[list[str]]:
    """``GET /v1/duplicates``: each group's note IDs (freshest first)."""
    response = client.get("/v1/duplicates")
    assert response.status_code == 200, response.text
    return [[n["id"] for n in g["notes"]] for g in data_of(response)["groups"]]


def test_duplicates_lists_every_scopes_groups_with_the_merge_a_turn_offers(owner: Owner) -> None:
    deploys = owner.tenant.notebook("deploys")
    older = owner.key.save(DEPLOY, projectId=deploys)
    newer = owner.key.save(DEPLOY_AGAIN, projectId=deploys)
    owner.key.save(DEPLOY)  # the same words in another scope: never grouped with those
    standup = owner.key.save(STANDUP)
    standup_again = owner.key.save(STANDUP_AGAIN)
    owner.key.save(PLANT, projectId=deploys)
    listed = data_of(owner.session.get("/v1/duplicates"))
    assert listed["scanned"] == 6
    groups = listed["groups"]
    assert [[n["id"] for n in g["notes"]] for g in groups] == [
        [standup_again["id"], standup["id"]],  # the group with the freshest note first
        [newer["id"], older["id"]],
    ]
    assert groups[1]["notes"][0]["savedBy"]["kind"] == "connection"
    merge = groups[1]["merge"]
    assert merge["change"] == {
        "action": "merge",
        "noteIds": [newer["id"], older["id"]],
        "into": newer["id"],
        "content": DEPLOY_AGAIN,
        "kind": None,
    }
    # A turn given exactly that group offers exactly that change.
    conversation = owner.create()["id"]
    context = {"notes": merge["change"]["noteIds"], "only": True}
    turn = owner.answered(conversation, "Merge these notes", 1, context=context)["turn"]
    assert [p["change"] for p in turn["proposals"]] == [merge["change"]]
    # Once merged, the group is gone; a key sees only the groups its grants cover.
    done(owner, conversation, turn["proposals"][0], "apply")
    assert duplicate_groups(owner.session) == [[standup_again["id"], standup["id"]]]
    notebook_only = owner.tenant.key(
        "deploys only", personal=False, all_notebooks=False, notebook_ids=[uuid.UUID(deploys)]
    )
    assert duplicate_groups(notebook_only) == []
    assert duplicate_groups(owner.key) == [[standup_again["id"], standup["id"]]]


def test_a_cleanup_question_proposes_for_the_whole_scope(owner: Owner) -> None:
    older = owner.key.save(DEPLOY)
    newer = owner.key.save(DEPLOY_AGAIN)
    soon = owner.key.save(
        "Handoff: finish the billing deploy checklist.",
        kind="handoff",
        taskId="t1",
        retentionDays=2,
    )
    owner.key.save(PLANT)
    for question in ("Find duplicates", "What's stale?", "clean up my notes", "any dupes?"):
        _, turn = ask(owner, question)
        assert turn["sources"] == [], question  # a search for those words finds nothing
        assert [p["change"]["action"] for p in turn["proposals"]] == ["archive", "merge"], question
        archive, merge = turn["proposals"]
        assert archive["change"]["noteIds"] == [soon["id"]]
        assert merge["change"]["noteIds"] == [newer["id"], older["id"]]
    # A topic named: the proposals stay with the notes its search found (the plant).
    _, topical = ask(owner, "Find duplicates about the office plant")
    assert topical["proposals"] == []


def test_a_cleanup_question_in_one_notebook_proposes_only_there(owner: Owner) -> None:
    deploys = owner.tenant.notebook("deploys")
    owner.key.save(DEPLOY)
    owner.key.save(DEPLOY_AGAIN)
    inside = [owner.key.save(s, projectId=deploys)["id"] for s in (STANDUP, STANDUP_AGAIN)]
    _, turn = ask(owner, "find duplicates", projectId=deploys)
    assert [set(p["change"]["noteIds"]) for p in turn["proposals"]] == [set(inside)]


def test_the_whole_scope_scan_uses_the_indexed_vectors_when_both_notes_have_them(
    owner: Owner, store: Store, stack: Stack
) -> None:
    a = owner.key.save(DEPLOY)
    b = owner.key.save(DEPLOY_AGAIN)
    ids = [uuid.UUID(a["id"]), uuid.UUID(b["id"])]

    def suggested(second: list[float]) -> list[str]:
        with psycopg.connect(stack.database.grove_superuser_url) as conn:
            conn.execute("DELETE FROM embeddings WHERE memory_id = ANY(%s)", (ids,))
            for note, vector in zip(ids, ([1.0, 0.0, 0.0], second), strict=True):
                conn.execute(
                    "INSERT INTO embeddings (account_id, memory_id, version, profile, dimensions,"
                    " embedding) VALUES (%s, %s, 1, 'probe', 3, %s::vector)",
                    (owner.tenant.account_id, note, str(vector)),
                )
        probe = Store(pool=store.pool, cursor_secret=b"x", profile="probe")
        principal = owner.principal()
        with transaction(store.pool, principal.account_id) as conn:
            drafts = cleanup.suggest(conn, probe, principal, "true", {})
        return [d.change.action for d in drafts]

    assert suggested([0.0, 1.0, 0.0]) == []
    assert suggested([0.9, 0.1, 0.0]) == ["merge"]


#: Digits as letters: made-up words without digits (which ``duplicates`` weighs double).
LETTERS = str.maketrans("0123456789", "ghijklmnop")


def distinct_words() -> list[str]:
    """Six made-up words no other call shares (so their notes resemble nothing else)."""
    return [uuid.uuid4().hex[:10].translate(LETTERS) for _ in range(6)]


def save_all(owner: Owner, contents: list[str]) -> list[str]:
    """Save ``contents`` in order, a batch of up to 100 at a time; their IDs."""
    ids = []
    for start in range(0, len(contents), 100):
        items = [{"content": c, "kind": "fact"} for c in contents[start : start + 100]]
        response = owner.key.post("/v1/memories/batch", {"items": items})
        assert response.status_code == 200, response.text
        saved = data_of(response)["items"]
        assert {r["status"] for r in saved} == {"created"}, saved
        ids += [r["memory"]["id"] for r in saved]
    return ids


def test_duplicates_lists_the_twenty_freshest_groups(owner: Owner) -> None:
    contents = []
    for _ in range(MAX_DUPLICATE_GROUPS + 1):
        words = distinct_words()
        contents += [" ".join(words), " ".join(reversed(words)) + "."]
    ids = save_all(owner, contents)
    groups = duplicate_groups(owner.session)
    assert len(groups) == MAX_DUPLICATE_GROUPS
    assert groups[0] == [ids[-1], ids[-2]] and groups[-1] == [ids[3], ids[2]]
    assert ids[0] not in {i for group in groups for i in group}  # the oldest group is left


def test_copies_of_a_note_saved_many_times_are_one_group(owner: Owner) -> None:
    # Every band of the copies is held by more than COMMON_BAND notes: only neighbours
    # are compared, and the copies still join one group (its freshest MAX_MERGE_NOTES).
    ids = save_all(owner, [DEPLOY] * (cleanup.COMMON_BAND + 1))
    assert duplicate_groups(owner.session) == [list(reversed(ids))[:MAX_MERGE_NOTES]]


def test_duplicates_compare_the_two_thousand_most_recently_updated_notes(owner: Owner) -> None:
    pair = save_all(owner, [DEPLOY, DEPLOY_AGAIN])
    fillers = [" ".join(distinct_words()) for _ in range(cleanup.SCAN_NOTES - 2)]
    save_all(owner, fillers)
    listed = data_of(owner.session.get("/v1/duplicates"))
    assert listed["scanned"] == cleanup.SCAN_NOTES
    assert [[n["id"] for n in g["notes"]] for g in listed["groups"]] == [pair[::-1]]
    save_all(owner, [" ".join(distinct_words())])  # the oldest note leaves the scan
    listed = data_of(owner.session.get("/v1/duplicates"))
    assert listed["scanned"] == cleanup.SCAN_NOTES and listed["groups"] == []

"""Recall and search by meaning, with the real MiniLM, the worker and pgvector."""

from __future__ import annotations

import time
from typing import Any

import pytest

from grove_db.embedded import EmbeddedDatabase
from tests.support.clients import Client, data_of, error_of
from tests.support.processes import Running, start_api, start_ask
from tests.support.tenants import Tenant, new_tenant
from tests.support.waiting import wait_until

SEARCH = "/v1/memories/search"
#: Generous: the worker shares two cores with other test runs.
INDEXING_TIMEOUT = 60.0
#: The API's default semantic distance threshold (GROVE_SEMANTIC_MAX_DISTANCE).
MAX_DISTANCE = 0.8
#: The API's default weight of BM25 against similarity (GROVE_LEXICAL_WEIGHT).
LEXICAL_WEIGHT = 0.55
HYBRID = {"lexical": True, "semantic": True}
UNAVAILABLE = {"lexical": True, "semantic": False, "reason": "inference_unavailable"}
DISABLED = {"lexical": True, "semantic": False, "reason": "disabled"}

#: Note -> a question about it that shares no word with any of these notes (checked
#: by ``test_meaning_pairs_share_no_word_with_any_note`` with PostgreSQL's stemmer).
MEANING_PAIRS = [
    ("We deploy with Argo CD every Tuesday", "what is our release cadence?"),
    ("Alice is allergic to peanuts", "what food should she avoid?"),
    (
        "The office Wi-Fi password is taped under the printer",
        "how do I get on the wireless network?",
    ),
    ("Bob prefers tabs over spaces for indentation", "what whitespace style does he want?"),
    (
        "Our PostgreSQL backups run nightly at 2 AM and are kept for thirty days",
        "when is the database snapshot taken?",
    ),
    ("The quarterly budget review moved to Thursday afternoon", "when is the finance meeting?"),
    ("Carol's daughter was born in March", "does she have kids?"),
    ("The CEO flies to Tokyo next week for the partner summit", "who is travelling to Japan?"),
    ("Frank speaks fluent German and Spanish", "which languages does he know?"),
    ("Eve is on parental leave until September", "when will she be back at work?"),
    ("The fire extinguisher hangs next to the kitchen door", "where is the safety equipment?"),
    (
        "The mobile app crashes when the camera permission is denied",
        "why does the phone application fail?",
    ),
    ("Dave drinks his coffee black with no sugar", "how does he take his morning beverage?"),
    ("Customer invoices are emailed on the first day of each month", "when do clients get billed?"),
    ("The team lunch is at the Italian restaurant downtown", "where are we eating pizza together?"),
    (
        "Our API rate limit is 100 requests per minute per key",
        "how many calls can a client make before being throttled?",
    ),
]

RARE_ERROR = "The nightly import failed with ERR_4471 after the vendor changed the file layout"
GENERIC_ERRORS = [
    "An error code means the request failed; check the error message",
    "Errors in the payment service are logged to Sentry",
    "Most errors come from expired credentials",
    "The error rate doubled after the last release",
    "Error handling: retry timeouts three times, then raise an error",
]

REPLICATION_QUERY = "database replication lag"
# Both signals: every query word, and close in meaning.
LAG_GREW = "Replication lag on the database grew to 40 seconds during the backfill"
LAG_FINE = "The database migration for replication settings is done, lag is fine"
# Every query word, twice, but further in meaning: first by words, third by meaning.
KARAOKE = (
    "Karaoke night song list: database replication lag, database replication lag, and other hits"
)
# Some of the query words, and close in meaning.
LAG_ALERTS = "Replication lag alerts page the on-call engineer"
# Close in meaning only: no query word ("replicas" stems apart from "replication").
REPLICAS_TRAIL = "Postgres replicas trail the leader when disks are slow"
# Far in meaning (cosine distance above 0.9 with MiniLM), no shared word: never filler.
UNRELATED = ["The cat sat on the mat", "Buy oat milk and bananas on the way home"]
REPLICATION_NOTES = [LAG_GREW, LAG_FINE, KARAOKE, LAG_ALERTS, REPLICAS_TRAIL, *UNRELATED]
LEXICAL_MATCHES = {LAG_GREW, LAG_FINE, KARAOKE, LAG_ALERTS}
ALL_MATCHES = {*LEXICAL_MATCHES, REPLICAS_TRAIL}


def indexed(tenant: Tenant, note: dict[str, Any]) -> dict[str, Any]:
    """Wait until the worker has embedded the note's current revision."""

    def ready() -> dict[str, Any] | None:
        current = data_of(tenant.client.get(f"/v1/memories/{note['id']}"))
        return current if current["indexing"] == "ready" else None

    return wait_until(ready, timeout=INDEXING_TIMEOUT)  # type: ignore[no-any-return]


def save_indexed(tenant: Tenant, contents: list[str]) -> dict[str, dict[str, Any]]:
    """Save the notes in order and wait until all are embedded; content -> note."""
    saved = [tenant.client.save(content) for content in contents]
    assert {note["indexing"] for note in saved} == {"pending"}
    ids = {note["id"] for note in saved}

    def all_ready() -> dict[str, dict[str, Any]] | None:
        listed = data_of(tenant.client.get("/v1/memories?limit=100"))["items"]
        ready = {n["content"]: n for n in listed if n["id"] in ids and n["indexing"] == "ready"}
        return ready if len(ready) == len(ids) else None

    return wait_until(all_ready, timeout=INDEXING_TIMEOUT)  # type: ignore[no-any-return]


def search(client: Client, query: str, **fields: Any) -> dict[str, Any]:
    response = client.post(SEARCH, {"query": query, **fields})
    assert response.status_code == 200, response.text
    return data_of(response)  # type: ignore[no-any-return]


def recall(client: Client, query: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/recall", {"query": query, **fields})
    assert response.status_code == 200, response.text
    return data_of(response)  # type: ignore[no-any-return]


def contents(body: dict[str, Any]) -> list[str]:
    return [item["memory"]["content"] for item in body["items"]]


def all_pages(client: Client, query: str, limit: int, **fields: Any) -> list[str]:
    """Every page of a search, following ``nextCursor``; the IDs in order."""
    ids: list[str] = []
    cursor: str | None = None
    for _ in range(100):
        body = search(
            client, query, limit=limit, **({"cursor": cursor} if cursor else {}), **fields
        )
        assert len(body["items"]) <= limit
        ids += [item["memory"]["id"] for item in body["items"]]
        cursor = body["nextCursor"]
        if cursor is None:
            return ids
    raise AssertionError("paging never ended")


# --- recall by meaning ---------------------------------------------------------------


def test_note_is_recalled_by_meaning_with_no_shared_word(hybrid_tenant: Tenant) -> None:
    note = hybrid_tenant.client.save("We deploy with Argo CD every Tuesday")
    assert note["indexing"] == "pending"
    indexed(hybrid_tenant, note)
    response = hybrid_tenant.client.post("/v1/recall", {"query": "what is our release cadence?"})
    body = data_of(response)
    assert body["retrieval"] == {"lexical": True, "semantic": True}
    assert [item["memory"]["id"] for item in body["items"]] == [note["id"]]


def test_meaning_pairs_share_no_word_with_any_note(tenant: Tenant) -> None:
    # On the lexical-only API, recall matches any stemmed query word: nothing may match,
    # so on the hybrid API only meaning can find these notes.
    for note, _ in MEANING_PAIRS:
        tenant.client.save(note)
    for _, query in MEANING_PAIRS:
        body = recall(tenant.client, query)
        assert body["retrieval"] == DISABLED
        assert contents(body) == [], query


def test_each_question_recalls_its_own_note_first_among_the_others(hybrid_tenant: Tenant) -> None:
    notes = save_indexed(hybrid_tenant, [note for note, _ in MEANING_PAIRS])
    assert len(notes) == len(MEANING_PAIRS)
    top: dict[str, str | None] = {}
    for _, query in MEANING_PAIRS:
        body = recall(hybrid_tenant.client, query)
        assert body["retrieval"] == HYBRID, query
        top[query] = contents(body)[0] if body["items"] else None
    assert top == {query: note for note, query in MEANING_PAIRS}


def test_rare_identifier_is_found_first_by_its_exact_words(hybrid_tenant: Tenant) -> None:
    notes = save_indexed(hybrid_tenant, [RARE_ERROR, *GENERIC_ERRORS])

    recalled = recall(hybrid_tenant.client, "ERR_4471")
    assert recalled["retrieval"] == HYBRID
    assert contents(recalled)[0] == RARE_ERROR

    found = search(hybrid_tenant.client, "ERR_4471", matches=True)
    assert found["retrieval"] == HYBRID
    first = found["items"][0]
    assert first["memory"]["id"] == notes[RARE_ERROR]["id"]
    assert first["matches"]["lexical"] is True
    assert first["matches"]["terms"] == ["4471", "err"]
    # Only the rare note holds the identifier; by meaning alone another note is closer,
    # so it is the lexical signal that puts the rare note first.
    others = found["items"][1:]
    assert all(item["matches"]["lexical"] is False for item in others)
    closest = min(
        (item for item in found["items"] if item["matches"]["semantic"]),
        key=lambda item: item["matches"]["distance"],
    )
    assert closest["memory"]["content"] != RARE_ERROR


# --- search on the hybrid API ---------------------------------------------------------


def test_search_adds_the_normalized_scores_of_both_signals(hybrid_tenant: Tenant) -> None:
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    client = hybrid_tenant.client
    lexical = search(client, REPLICATION_QUERY, mode="lexical", limit=50)
    semantic = search(client, REPLICATION_QUERY, mode="semantic", matches=True, limit=50)
    default = search(client, REPLICATION_QUERY, matches=True, limit=50)
    assert default == search(
        client, REPLICATION_QUERY, matches=True, limit=50, sort="relevance", mode="hybrid"
    )
    assert default["retrieval"] == HYBRID
    assert default["nextCursor"] is None

    # Lexical alone: BM25 over the best BM25, so the best word match scores the weight.
    lexical_score = {i["memory"]["content"]: i["score"] for i in lexical["items"]}
    assert set(lexical_score) == LEXICAL_MATCHES
    assert max(lexical_score.values()) == pytest.approx(LEXICAL_WEIGHT, abs=1e-6)
    # KARAOKE holds every query word twice but is long: BM25 still ranks it first by words.
    assert contents(lexical)[0] == KARAOKE
    # Semantic alone: similarity scaled from the worst (0) to the best (the rest).
    distance = {i["memory"]["content"]: i["matches"]["distance"] for i in semantic["items"]}
    high, low = 1 - min(distance.values()), 1 - max(distance.values())
    for item in semantic["items"]:
        scaled = (1 - item["matches"]["distance"] - low) / (high - low)
        assert item["score"] == pytest.approx((1 - LEXICAL_WEIGHT) * scaled, abs=2e-6)

    # Hybrid: the two scores added, and the order follows the sum.
    semantic_score = {i["memory"]["content"]: i["score"] for i in semantic["items"]}
    items = {item["memory"]["content"]: item for item in default["items"]}
    assert set(items) == ALL_MATCHES == set(lexical_score) | set(semantic_score)
    expected = {c: lexical_score.get(c, 0.0) + semantic_score.get(c, 0.0) for c in items}
    for content, item in items.items():
        assert item["score"] == pytest.approx(expected[content], abs=4e-6), content
        assert item["matches"]["lexical"] is (content in lexical_score)
    fused = contents(default)
    assert [expected[c] for c in fused] == sorted(expected.values(), reverse=True)
    # Meaning reorders the word matches: KARAOKE leads by words, not once fused.
    assert fused[0] != contents(lexical)[0]


def test_search_modes_use_one_signal_or_both(hybrid_tenant: Tenant, tenant: Tenant) -> None:
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    lexical = search(
        hybrid_tenant.client, REPLICATION_QUERY, mode="lexical", matches=True, limit=50
    )
    assert lexical["retrieval"] == {"lexical": True, "semantic": False}
    assert set(contents(lexical)) == LEXICAL_MATCHES
    assert all(not item["matches"]["semantic"] for item in lexical["items"])

    semantic = search(hybrid_tenant.client, REPLICATION_QUERY, mode="semantic", matches=True)
    assert semantic["retrieval"] == {"lexical": False, "semantic": True}
    assert all(not item["matches"]["lexical"] for item in semantic["items"])
    distances = [item["matches"]["distance"] for item in semantic["items"]]
    assert distances == sorted(distances) and len(distances) > len(LEXICAL_MATCHES)

    hybrid = search(hybrid_tenant.client, REPLICATION_QUERY, mode="hybrid", limit=50)
    assert set(contents(hybrid)) == set(contents(lexical)) | set(contents(semantic))
    # Without embeddings, semantic mode finds nothing and says why.
    tenant.client.save(REPLICATION_NOTES[0])
    unavailable = search(tenant.client, REPLICATION_QUERY, mode="semantic")
    assert unavailable == {
        "retrieval": {"lexical": False, "semantic": False, "reason": "disabled"},
        "items": [],
        "nextCursor": None,
    }
    refused = hybrid_tenant.client.post(
        "/v1/memories/search", {"query": REPLICATION_QUERY, "mode": "fuzzy"}
    )
    assert refused.status_code == 400


def test_search_matches_report_the_evidence_of_each_signal(hybrid_tenant: Tenant) -> None:
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    body = search(hybrid_tenant.client, REPLICATION_QUERY, matches=True)
    items = {item["memory"]["content"]: item for item in body["items"]}
    for content in LEXICAL_MATCHES:
        matches = items[content]["matches"]
        assert matches["lexical"] is True
        assert matches["semantic"] is True
        expected_terms = (
            ["lag", "replic"] if content == LAG_ALERTS else ["databas", "lag", "replic"]
        )
        assert matches["terms"] == expected_terms  # stemmed lexemes
        assert isinstance(matches["distance"], float)
        assert 0 <= matches["distance"] <= MAX_DISTANCE
    for content in (REPLICAS_TRAIL,):
        matches = items[content]["matches"]
        assert matches == {
            "lexical": False,
            "semantic": True,
            "terms": [],
            "distance": matches["distance"],
        }
        assert isinstance(matches["distance"], float)
        assert 0 <= matches["distance"] <= MAX_DISTANCE

    plain = search(hybrid_tenant.client, REPLICATION_QUERY)
    assert all("matches" not in item for item in plain["items"])
    assert contents(plain) == contents(body)


def test_a_turn_is_found_through_the_message_its_source_saved_before_it(
    hybrid_tenant: Tenant,
) -> None:
    client = hybrid_tenant.client
    chat: dict[str, Any] = {"provenance": {"sourceAgent": "chat with Melanie, 3 May"}}
    other: dict[str, Any] = {"provenance": {"sourceAgent": "chat with Jo, 4 May"}}
    told = "Melanie: I finally finished the pottery class and glazed my first bowl"
    shown = "Melanie: Take a look at this."
    # Saved in this order: another source's turn and a note naming no source interleave.
    saved = [
        client.save(told, **chat),
        client.save("Jo: Take a look at this.", **other),
        client.save(shown, **chat),
        client.save("Sam: Take a look at this."),
    ]
    for note in saved:
        indexed(hybrid_tenant, note)
    found = search(client, "pottery class ceramics", mode="semantic", matches=True)
    by_content = {item["memory"]["content"]: item for item in found["items"]}
    assert list(by_content)[:2] == [told, shown]
    # Found through its neighbour: its own distance is beyond the threshold.
    assert by_content[shown]["matches"]["distance"] > MAX_DISTANCE
    assert set(by_content) == {told, shown}  # other sources' turns are not its neighbours
    recalled = recall(client, "pottery class ceramics")
    assert contents(recalled)[:2] == [told, shown]


def test_unrelated_notes_are_not_returned_as_semantic_filler(hybrid_tenant: Tenant) -> None:
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    searched = search(hybrid_tenant.client, REPLICATION_QUERY, matches=True, limit=50)
    recalled = recall(hybrid_tenant.client, REPLICATION_QUERY, limit=20)
    for body in (searched, recalled):
        assert body["retrieval"] == HYBRID
        assert body["items"]
        assert not set(contents(body)) & set(UNRELATED)
    # A query unrelated to every note finds nothing at all.
    assert search(hybrid_tenant.client, "volcanic eruptions in Iceland")["items"] == []
    assert recall(hybrid_tenant.client, "volcanic eruptions in Iceland")["items"] == []


def test_search_sorted_by_update_time_orders_the_same_results_newest_first(
    hybrid_tenant: Tenant,
) -> None:
    notes = save_indexed(hybrid_tenant, REPLICATION_NOTES)
    # Correct the oldest match so it becomes the most recently updated one.
    response = hybrid_tenant.client.patch(
        f"/v1/memories/{notes[LAG_GREW]['id']}",
        {"content": LAG_GREW + " (resolved by adding a replica)"},
    )
    assert response.status_code == 200, response.text
    indexed(hybrid_tenant, notes[LAG_GREW])

    relevance = search(hybrid_tenant.client, REPLICATION_QUERY, limit=50)
    newest = search(hybrid_tenant.client, REPLICATION_QUERY, limit=50, sort="updated_desc")
    assert newest["retrieval"] == HYBRID
    assert len(newest["items"]) == len(ALL_MATCHES)
    assert {i["memory"]["id"] for i in newest["items"]} == {
        i["memory"]["id"] for i in relevance["items"]
    }
    updated = [item["memory"]["updatedAt"] for item in newest["items"]]
    assert updated == sorted(updated, reverse=True)
    assert len(set(updated)) == len(updated)
    assert newest["items"][0]["memory"]["id"] == notes[LAG_GREW]["id"]


@pytest.mark.parametrize("sort", ["relevance", "updated_desc"])
def test_search_pages_return_every_result_exactly_once(hybrid_tenant: Tenant, sort: str) -> None:
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    whole = search(hybrid_tenant.client, REPLICATION_QUERY, limit=50, sort=sort)
    expected = [item["memory"]["id"] for item in whole["items"]]
    assert len(expected) == len(ALL_MATCHES)
    for limit in (1, 2, 5):
        assert all_pages(hybrid_tenant.client, REPLICATION_QUERY, limit, sort=sort) == expected


def test_later_pages_leave_out_notes_saved_after_the_first(hybrid_tenant: Tenant) -> None:
    # The first page fixes a ceiling for both signals: a note saved after it (found by
    # its words and, once embedded, by its meaning) never shifts or joins later pages.
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    expected = [
        item["memory"]["id"]
        for item in search(hybrid_tenant.client, REPLICATION_QUERY, limit=50)["items"]
    ]
    first = search(hybrid_tenant.client, REPLICATION_QUERY, limit=1)
    later = indexed(
        hybrid_tenant, hybrid_tenant.client.save(LAG_GREW + " again, database replication lag")
    )
    # Meaning alone finds it now, so only the ceiling keeps it out.
    assert later["id"] in {
        i["memory"]["id"]
        for i in search(hybrid_tenant.client, REPLICATION_QUERY, mode="semantic")["items"]
    }
    ids = [item["memory"]["id"] for item in first["items"]]
    cursor = first["nextCursor"]
    while cursor:
        body = search(hybrid_tenant.client, REPLICATION_QUERY, limit=1, cursor=cursor)
        ids += [item["memory"]["id"] for item in body["items"]]
        cursor = body["nextCursor"]
    assert ids == expected and later["id"] not in ids


def test_search_cursor_is_bound_to_its_query_and_signed(hybrid_tenant: Tenant) -> None:
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    first = search(hybrid_tenant.client, REPLICATION_QUERY, limit=1)
    cursor = first["nextCursor"]
    assert cursor
    body, _, signature = cursor.partition(".")
    tampered = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + signature
    for query, fields in [
        ("replication lag", {"cursor": cursor}),  # another query
        (REPLICATION_QUERY, {"cursor": cursor, "sort": "updated_desc"}),  # another sort
        (REPLICATION_QUERY, {"cursor": cursor, "kind": "decision"}),  # another filter
        (REPLICATION_QUERY, {"cursor": tampered}),
        (REPLICATION_QUERY, {"cursor": "garbage"}),
    ]:
        response = hybrid_tenant.client.post(SEARCH, {"query": query, "limit": 1, **fields})
        assert response.status_code == 400, (query, fields)
        assert error_of(response)["code"] == "invalid_cursor", (query, fields)
    # The untouched cursor still works, with another page size.
    response = hybrid_tenant.client.post(
        SEARCH, {"query": REPLICATION_QUERY, "limit": 2, "cursor": cursor}
    )
    assert response.status_code == 200, response.text


# --- without the semantic signal ------------------------------------------------------


def test_search_and_recall_answer_lexically_once_the_ask_service_stops(
    database: EmbeddedDatabase,
) -> None:
    started: list[Running] = []
    try:
        ask = start_ask({"GROVE_EMBEDDING_PROFILE": "minilm"})
        started.append(ask)
        api = start_api(
            {
                "GROVE_DATABASE_URL": database.runtime_url,
                "GROVE_EMBEDDING_PROFILE": "minilm",
                "GROVE_ASK_ADDRESS": ask.url,
                "GROVE_API_WORKERS": "1",
            }
        )
        started.append(api)
        owner = new_tenant(database, api.url)
        note = owner.client.save(RARE_ERROR)
        owner.client.save(GENERIC_ERRORS[0])
        assert note["indexing"] == "pending"  # no worker: it stays so
        # While the ask service runs, the query is embedded (within the 300 ms budget;
        # allow a retry for a cold channel on a busy machine).
        wait_until(lambda: search(owner.client, "ERR_4471")["retrieval"] == HYBRID, timeout=30)

        ask.stop()

        began = time.monotonic()
        searched = search(owner.client, "ERR_4471", matches=True)
        recalled = recall(owner.client, "ERR_4471")
        assert time.monotonic() - began < 10
        for body in (searched, recalled):
            assert body["retrieval"] == UNAVAILABLE
            assert [item["memory"]["id"] for item in body["items"]] == [note["id"]]
        assert searched["items"][0]["matches"] == {
            "lexical": True,
            "semantic": False,
            "terms": ["4471", "err"],
            "distance": None,
        }
        later = owner.client.save("Saved while the ask service is down")
        assert later["indexing"] == "pending"  # (the suite's own workers may embed it later)
    finally:
        for running in reversed(started):
            running.stop()


def test_search_and_recall_answer_lexically_when_the_ask_service_never_answers(
    database: EmbeddedDatabase,
) -> None:
    api = start_api(
        {
            "GROVE_DATABASE_URL": database.runtime_url,
            "GROVE_EMBEDDING_PROFILE": "minilm",
            "GROVE_ASK_ADDRESS": "127.0.0.1:1",  # nothing listens here
            "GROVE_API_WORKERS": "1",
        }
    )
    try:
        owner = new_tenant(database, api.url)
        note = owner.client.save(RARE_ERROR)
        assert note["indexing"] == "pending"
        owner.client.save(GENERIC_ERRORS[0])
        for body in (search(owner.client, "ERR_4471"), recall(owner.client, "ERR_4471")):
            assert body["retrieval"] == UNAVAILABLE
            assert [item["memory"]["id"] for item in body["items"]] == [note["id"]]
    finally:
        api.stop()


def test_search_and_recall_say_semantic_is_disabled_without_a_profile(tenant: Tenant) -> None:
    note = tenant.client.save(RARE_ERROR)
    assert note["indexing"] == "disabled"
    tenant.client.save(GENERIC_ERRORS[0])
    searched = search(tenant.client, "ERR_4471", matches=True)
    recalled = recall(tenant.client, "ERR_4471")
    for body in (searched, recalled):
        assert body["retrieval"] == DISABLED
        assert [item["memory"]["id"] for item in body["items"]] == [note["id"]]
    assert searched["items"][0]["matches"]["distance"] is None


# --- known product bugs (these fail until fixed; see the notes in each test) ----------


def test_search_cursor_of_all_notebooks_is_refused_for_personal_notes_only(
    hybrid_tenant: Tenant,
) -> None:
    # Omitting projectId searches every granted scope; projectId null searches only the
    # personal notes. They are different listings, so a cursor of one is invalid for the
    # other (else the offset of one list skips or repeats results of the other).
    # Bug: grove_memory.search.recall.search hashes req.model_dump(), where an omitted and a
    # null projectId both dump as None, so the cursor binding cannot tell them apart.
    notebook = hybrid_tenant.notebook("ops")
    for i in range(2):
        hybrid_tenant.client.save(f"ERR_4471 seen in the notebook, run {i}", projectId=notebook)
        hybrid_tenant.client.save(f"ERR_4471 seen in a personal note, run {i}")
    everywhere = search(hybrid_tenant.client, "ERR_4471", limit=1)
    personal = search(hybrid_tenant.client, "ERR_4471", limit=1, projectId=None)
    for cursor, fields in [
        (everywhere["nextCursor"], {"projectId": None}),
        (personal["nextCursor"], {}),
    ]:
        assert cursor
        response = hybrid_tenant.client.post(
            SEARCH, {"query": "ERR_4471", "limit": 1, "cursor": cursor, **fields}
        )
        assert response.status_code == 400, (fields, response.text)
        assert error_of(response)["code"] == "invalid_cursor"


def test_search_excluded_word_also_excludes_semantic_matches(hybrid_tenant: Tenant) -> None:
    # websearch syntax: "-karaoke" excludes notes with that word, whichever signal found them.
    # Bug: grove_memory.search.recall.search filters only the lexical candidates by the query;
    # the semantic ones (SEMANTIC, embedded from the raw query text) ignore the exclusion.
    save_indexed(hybrid_tenant, REPLICATION_NOTES)
    body = search(hybrid_tenant.client, REPLICATION_QUERY + " -karaoke", matches=True, limit=50)
    assert body["retrieval"] == HYBRID
    assert body["items"]
    assert KARAOKE not in contents(body)
    assert all("karaoke" not in c.lower() for c in contents(body))


def test_a_metadata_only_correction_keeps_the_vector_and_stays_ready(
    hybrid_tenant: Tenant,
) -> None:
    note = indexed(hybrid_tenant, hybrid_tenant.client.save("We deploy with Argo CD every Tuesday"))
    patched = hybrid_tenant.client.patch(f"/v1/memories/{note['id']}", {"kind": "decision"})
    assert data_of(patched)["version"] == 2
    assert data_of(patched)["indexing"] == "ready"
    body = data_of(
        hybrid_tenant.client.post("/v1/recall", {"query": "what is our release cadence?"})
    )
    assert [item["memory"]["id"] for item in body["items"]] == [note["id"]]
    reworded = hybrid_tenant.client.patch(
        f"/v1/memories/{note['id']}", {"content": "We deploy with Argo CD every Wednesday"}
    )
    assert data_of(reworded)["indexing"] == "pending"

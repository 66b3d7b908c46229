"""Lexical postings (note_words, migrations 0023, 0026 and 0032) and the common-terms split of BM25.

The postings follow each note in the writing transaction: its words with their
frequencies on save, the new words and frequencies after an edit, the note's scope after a
move, none once forgotten;
another tenant sees none of them. BM25 finds candidates through its rarest words and lets
common words only rank, but only for a caller who may see the whole account; a narrower
caller's words all find candidates.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from grove_auth.principal import Principal
from grove_db import embedded, schema
from grove_db.pool import Conn, open_pool, transaction
from grove_memory.search import recall

COMMON = 400
BUDGET = 50


@pytest.fixture(scope="module")
def fresh(database: embedded.EmbeddedDatabase) -> Iterator[Any]:
    with schema.fresh_database(database) as url:
        pool = open_pool(embedded.role_url(url, embedded.RUNTIME_ROLE), max_size=2)
        yield url, pool
        pool.close()


def _account(url: str) -> uuid.UUID:
    account = uuid.uuid4()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO accounts (id, name) VALUES (%s, 'words')", (account,))
    return account


def _save(conn: Conn, account: uuid.UUID, content: str) -> uuid.UUID:
    note = uuid.uuid4()
    conn.execute(
        "INSERT INTO memories (account_id, id, kind, content, indexing)"
        " VALUES (%s, %s, 'fact', %s, 'ready')",
        (account, note, content),
    )
    return note


def _words(conn: Conn, note: uuid.UUID) -> list[str]:
    return list(_frequencies(conn, note))


def _frequencies(conn: Conn, note: uuid.UUID) -> dict[str, int]:
    rows = conn.execute(
        "SELECT word, tf FROM note_words WHERE memory_id = %s ORDER BY word", (note,)
    ).fetchall()
    return {row["word"]: row["tf"] for row in rows}


def test_postings_follow_the_note_and_stay_in_their_tenant(fresh: Any) -> None:
    url, pool = fresh
    mine, other = _account(url), _account(url)
    with transaction(pool, mine) as conn:
        note = _save(conn, mine, "Deploys run on Fridays")
        assert _words(conn, note) == ["deploy", "friday", "run"]
    with transaction(pool, mine) as conn:
        conn.execute(
            "UPDATE memories SET content = 'Deploys pause on Mondays' WHERE id = %s", (note,)
        )
        assert _words(conn, note) == ["deploy", "monday", "paus"]
        conn.execute("UPDATE memories SET kind = 'decision' WHERE id = %s", (note,))
        assert _words(conn, note) == ["deploy", "monday", "paus"]
    with transaction(pool, other) as conn:
        assert _words(conn, note) == []  # row-level security: not this tenant's
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
        transaction(pool, other) as conn,
    ):
        conn.execute(
            "INSERT INTO note_words (account_id, word, memory_id) VALUES (%s, 'x', %s)",
            (mine, note),
        )
    with transaction(pool, mine) as conn:
        conn.execute("UPDATE memories SET deleted_at = now() WHERE id = %s", (note,))
        assert _words(conn, note) == []


def test_postings_carry_the_notes_scope_through_moves_and_edits(fresh: Any) -> None:
    url, pool = fresh
    account = _account(url)
    notebook = uuid.uuid4()

    def scopes(conn: Conn, note: uuid.UUID) -> set[uuid.UUID | None]:
        rows = conn.execute(
            "SELECT DISTINCT project_id FROM note_words WHERE memory_id = %s", (note,)
        ).fetchall()
        return {row["project_id"] for row in rows}

    with transaction(pool, account) as conn:
        conn.execute(
            "INSERT INTO projects (account_id, id, name) VALUES (%s, %s, 'billing')",
            (account, notebook),
        )
        note = _save(conn, account, "Invoices close on the first")
        assert scopes(conn, note) == {None}
        conn.execute("UPDATE memories SET project_id = %s WHERE id = %s", (notebook, note))
        assert scopes(conn, note) == {notebook}
        conn.execute(
            "UPDATE memories SET content = 'Invoices close monthly', project_id = NULL"
            " WHERE id = %s",
            (note,),
        )
        assert scopes(conn, note) == {None}
        assert _words(conn, note) == ["close", "invoic", "month"]


def test_postings_carry_each_words_frequency_and_bm25_ranks_by_it(fresh: Any) -> None:
    url, pool = fresh
    account = _account(url)
    everything = Principal(account, uuid.uuid4(), personal=True, all_notebooks=True)
    with transaction(pool, account) as conn:
        often = _save(conn, account, "Deploys, deploys and one more deploy on Friday")
        once = _save(conn, account, "A deploy on Friday")
        assert _frequencies(conn, often) == {"deploy": 3, "friday": 1, "one": 1}
        assert _frequencies(conn, once) == {"deploy": 1, "friday": 1}
    with transaction(pool, account) as conn:
        rows = recall.lexical_candidates(conn, everything, "deploy", "true", {"limit": 10})
        assert [row["id"] for row in rows] == [often, once]
        assert [row["terms"] for row in rows] == [["deploy"], ["deploy"]]
        # An edit that changes how often a word occurs changes its frequency, and the rank.
        conn.execute(
            "UPDATE memories SET content = 'A deploy, a deploy, a deploy, a deploy' WHERE id = %s",
            (once,),
        )
        assert _frequencies(conn, once) == {"deploy": 4}
        rows = recall.lexical_candidates(conn, everything, "deploy friday", "true", {"limit": 10})
        assert {row["id"]: row["terms"] for row in rows} == {
            often: ["deploy", "friday"],
            once: ["deploy"],
        }
        ranked = recall.lexical_candidates(conn, everything, "deploy", "true", {"limit": 10})
        assert [row["id"] for row in ranked] == [once, often]


@pytest.fixture(scope="module")
def corpus(fresh: Any) -> Any:
    """COMMON notes with "weather", a few with "zeppelin" too, one notebook note."""
    url, pool = fresh
    account = _account(url)
    with transaction(pool, account) as conn:
        for n in range(COMMON):
            rare = " about the zeppelin" if n % 100 == 0 else ""
            _save(conn, account, f"note {n}: the weather{rare}")
    return account


@contextmanager
def _budget(budget: int) -> Iterator[None]:
    saved = recall.CANDIDATE_BUDGET
    recall.CANDIDATE_BUDGET = budget
    try:
        yield
    finally:
        recall.CANDIDATE_BUDGET = saved


def _split(pool: Any, principal: Principal, query: str, budget: int) -> dict[str, Any]:
    with _budget(budget), transaction(pool, principal.account_id) as conn:
        found = recall.bm25(conn, principal, query, "true")
    assert found is not None
    return found[1]


def test_common_words_rank_but_do_not_find_for_a_caller_who_sees_everything(
    fresh: Any, corpus: uuid.UUID
) -> None:
    everything = Principal(corpus, uuid.uuid4(), personal=True, all_notebooks=True)
    words = _split(fresh[1], everything, "zeppelin weather", BUDGET)
    assert words["finding"] == ["zeppelin"]
    assert words["words"] == ["zeppelin", "weather"]
    frequency = dict(zip(words["counted"], words["df"], strict=True))
    assert frequency["zeppelin"] == COMMON // 100  # counted
    # Estimated from the position of the BUDGET-th id: every note has the word.
    assert 0.6 * COMMON <= frequency["weather"] <= COMMON, words
    # Under the budget every word finds candidates, counted exactly.
    words = _split(fresh[1], everything, "zeppelin weather", COMMON + 10)
    assert sorted(words["finding"]) == ["weather", "zeppelin"]
    assert dict(zip(words["counted"], words["df"], strict=True))["weather"] == COMMON


def test_a_narrower_caller_gets_exact_counts_over_what_it_may_see(
    fresh: Any, corpus: uuid.UUID
) -> None:
    personal = Principal(corpus, uuid.uuid4(), personal=True, all_notebooks=False)
    words = _split(fresh[1], personal, "zeppelin weather", BUDGET)
    assert sorted(words["finding"]) == ["weather", "zeppelin"]
    assert words["counted"] == [] and words["df"] == []  # counted by the statement


def test_bm25_with_common_words_ranks_the_rare_word_first(fresh: Any, corpus: uuid.UUID) -> None:
    everything = Principal(corpus, uuid.uuid4(), personal=True, all_notebooks=True)
    with _budget(BUDGET), transaction(fresh[1], corpus) as conn:
        rows = recall.lexical_candidates(
            conn, everything, "zeppelin weather", "true", {"limit": 10}
        )
    assert len(rows) == COMMON // 100  # only the notes the rare word finds
    assert all("zeppelin" in row["content"] for row in rows)
    assert all(row["score"] > 0 for row in rows)


def _lexical(pool: Any, principal: Principal, query: str, budget: int) -> list[dict[str, Any]]:
    with _budget(budget), transaction(pool, principal.account_id) as conn:
        return recall.lexical_candidates(conn, principal, query, "true", {"limit": 50})


def test_when_every_word_is_common_the_two_rarest_find_together(fresh: Any) -> None:
    url, pool = fresh
    account = _account(url)
    everything = Principal(account, uuid.uuid4(), personal=True, all_notebooks=True)
    with transaction(pool, account) as conn:
        for n in range(6):
            _save(conn, account, f"alpha beta {n}")
        for n in range(30):
            _save(conn, account, f"alpha {n}")
        for n in range(20):
            _save(conn, account, f"beta {n}")
        for n in range(10):
            _save(conn, account, f"epsilon {n}")
    # Over a budget of 4 every word is common: the notes with both of the two rarest
    # find candidates, at most 4 of them (of the 36 with "alpha" only 6 have "beta").
    words = _split(pool, everything, "alpha beta", 4)
    assert words["finding"] == []
    assert {words["rarest"], words["next"]} == {"alpha", "beta"}
    rows = _lexical(pool, everything, "alpha beta", 4)
    assert len(rows) == 4
    assert all(row["content"].startswith("alpha beta") for row in rows)
    # Two words no note has together, or one word: the rarest word's first notes, capped.
    words = _split(pool, everything, "alpha epsilon", 4)
    rows = _lexical(pool, everything, "alpha epsilon", 4)
    assert len(rows) == 4
    assert all(words["rarest"] in row["content"] for row in rows)
    assert len(_lexical(pool, everything, "epsilon", 4)) == 4
    # Under the budget the same query is exact: every note with either word.
    assert len(_lexical(pool, everything, "alpha epsilon", 1000)) == 46


def test_the_accounts_note_count_stands_in_for_counting_the_corpus(
    fresh: Any, corpus: uuid.UUID
) -> None:
    # A caller who sees everything takes the corpus size from the usage counter, one who
    # does not counts it; with every note personal the two are the same BM25.
    pool = fresh[1]
    everything = Principal(corpus, uuid.uuid4(), personal=True, all_notebooks=True)
    personal = Principal(corpus, uuid.uuid4(), personal=True, all_notebooks=False)
    assert _split(pool, everything, "zeppelin weather", COMMON + 10)["corpus"] == COMMON
    assert _split(pool, personal, "zeppelin weather", COMMON + 10)["corpus"] is None
    scores = [
        [(row["id"], round(row["score"], 9)) for row in _lexical(pool, p, "zeppelin", 1000)]
        for p in (everything, personal)
    ]
    assert scores[0] == scores[1]
    assert len(scores[0]) == COMMON // 100

"""A small run of the LongMemEval quality benchmark, so it cannot rot.

Made-up questions in LongMemEval's layout (the real data is for evaluation only) go the
benchmark's whole way: each haystack saved over REST into its own account (a long turn
cut into pieces), embedded by the real worker with MiniLM, searched hybrid, scored.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from bench import crossval, longmemeval, quality
from grove_contracts.notes import MAX_CONTENT_CHARS
from grove_db import embedded
from tests.support.clients import data_of
from tests.support.locomo import SAMPLE
from tests.support.tenants import Tenant, new_tenant
from tests.support.waiting import wait_until

LONG_REPLY = "Boil the water and salt it well before the pasta goes in. " * 120  # 7,080


def said(role: str, content: str, evidence: bool = False) -> dict[str, Any]:
    return {"role": role, "content": content, **({"has_answer": True} if evidence else {})}


QUESTIONS: list[dict[str, Any]] = [
    {
        "question_id": "smoke-dog",
        "question_type": "single-session-user",
        "question": "What breed is my dog Biscuit?",
        "question_date": "2023/05/30 (Tue) 10:00",
        "answer": "a corgi",
        "answer_session_ids": ["answer_dog"],
        # Dated out of order: the later session is listed first.
        "haystack_session_ids": ["answer_dog", "pasta"],
        "haystack_dates": ["2023/05/02 (Tue) 09:00", "2023/05/01 (Mon) 18:30"],
        "haystack_sessions": [
            [
                said("user", "I just adopted a corgi puppy named Biscuit.", evidence=True),
                said("assistant", "Congratulations! Puppies need a lot of sleep."),
            ],
            [said("user", "Can you suggest a pasta recipe?"), said("assistant", LONG_REPLY)],
        ],
    },
    {
        "question_id": "smoke-job",
        "question_type": "knowledge-update",
        "question": "Where do I work now?",
        "question_date": "2023/06/30 (Fri) 10:00",
        "answer": "Fabrikam",
        "answer_session_ids": ["answer_old", "answer_new"],
        "haystack_session_ids": ["answer_old", "peru", "answer_new"],
        "haystack_dates": [
            "2023/01/10 (Tue) 08:00",
            "2023/02/11 (Sat) 12:00",
            "2023/06/01 (Thu) 09:15",
        ],
        "haystack_sessions": [
            [said("user", "I work at Contoso as an analyst.", evidence=True)],
            [said("user", "What is the capital of Peru?"), said("assistant", "Lima.")],
            [said("user", "I started a new job at Fabrikam this week.", evidence=True)],
        ],
    },
    {
        "question_id": "smoke-pet_abs",  # abstention: no evidence, skipped
        "question_type": "single-session-user",
        "question": "What is my cat's name?",
        "question_date": "2023/05/30 (Tue) 10:00",
        "answer": "You did not mention a cat.",
        "answer_session_ids": ["answer_dog"],
        "haystack_session_ids": ["answer_dog"],
        "haystack_dates": ["2023/05/02 (Tue) 09:00"],
        "haystack_sessions": [[said("user", "I just adopted a corgi puppy named Biscuit.")]],
    },
]


def test_the_longmemeval_benchmark_runs_end_to_end(
    database: embedded.EmbeddedDatabase, hybrid_api_url: str, minilm_ask: str
) -> None:
    questions = longmemeval.chosen(QUESTIONS, None)
    assert [q.qid for q in questions] == ["smoke-dog", "smoke-job"]  # abstention skipped
    dog = questions[0]
    # Sessions in date order; each turn "[date] role: text"; the long reply in two pieces
    # of at most a note's length, each with the prefix, both of turn 2 of "pasta".
    assert dog.notes[0].content == "[2023/05/01 (Mon) 18:30] user: Can you suggest a pasta recipe?"
    pieces = [n for n in dog.notes if n.ref.startswith("longmemeval:smoke-dog:1:2:")]
    assert len(pieces) == 2
    assert all(len(p.content) <= MAX_CONTENT_CHARS for p in pieces)
    assert all(p.content.startswith("[2023/05/01 (Mon) 18:30] assistant: ") for p in pieces)
    assert dog.evidence == {("answer_dog", 1)}
    assert questions[1].evidence == {("answer_old", 1), ("answer_new", 1)}
    assert longmemeval.chosen(QUESTIONS, 1) == longmemeval.chosen(QUESTIONS, 2)[:1]

    tenants: dict[str, Tenant] = {}
    account_of: dict[str, str] = {}

    def new_key(name: str) -> str:
        tenant = new_tenant(database, hybrid_api_url)
        tenants[tenant.client.key or ""] = tenant
        account_of[name] = str(tenant.account_id)
        return tenant.client.key or ""

    def wait_ready(key: str, count: int) -> None:
        client = tenants[key].client

        def ready() -> bool:
            items = data_of(client.get("/v1/memories?limit=100"))["items"]
            return len(items) == count and all(i["indexing"] == "ready" for i in items)

        wait_until(ready, timeout=60)

    report = longmemeval.run(hybrid_api_url, new_key, wait_ready, questions)
    assert report["ingest"] | {"saveSeconds": 0, "readySeconds": 0, "notesPerSecond": 0} == {
        "notes": 9,
        "turns": 8,
        "turnsCut": 1,
        "meanChars": report["ingest"]["meanChars"],
        "saveSeconds": 0,
        "readySeconds": 0,
        "notesPerSecond": 0,
    }
    assert report["ingest"]["notesPerSecond"] > 0
    by_level = report["summary"]["hybrid"]
    assert set(by_level) == {"session", "turn"}
    for by_type in by_level.values():
        assert set(by_type) == {"all", "knowledge-update", "single-session-user"}
        assert by_type["all"]["questions"] == 2
        # A haystack of a few notes: every evidence session and turn is in the top 10.
        assert by_type["all"]["recall_all@10"] == 1.0
        for k in longmemeval.KS:
            assert 0 < by_type["all"][f"ndcg_any@{k}"] <= 1
    rows = {row["qid"]: row for row in report["rows"]["hybrid"]}
    assert rows["smoke-dog"]["turn"]["recall_all@5"] == 1.0

    saved = data_of(next(iter(tenants.values())).client.get("/v1/memories?limit=100"))["items"]
    assert {item["provenance"]["sourceRef"] for item in saved} >= {p.ref for p in pieces}
    lines = longmemeval.table(report).splitlines()
    assert any(line.startswith("publ.   session  BM25") for line in lines)
    assert "notes/s from save to ready" in lines[-1]

    # Cross-validation across both datasets, in process through the service's own
    # functions: two LoCoMo conversations and the two questions in two folds, each fold
    # holding out one of each; at the shipped constants it scores what HTTP scored (else
    # it exits).
    samples = [SAMPLE, {**SAMPLE, "sample_id": "smoke-2"}]
    locomo = quality.run(hybrid_api_url, new_key, wait_ready, samples, modes=("hybrid",))
    grid: dict[str, tuple[Any, ...]] = {"lexical_weight": (0.55, 0.8), "k1": (1.2, 2.0)}
    tuned = crossval.tune(
        database.runtime_url,
        minilm_ask,
        [
            crossval.Asked(
                "LoCoMo",
                crossval.LOCOMO_METRICS,
                crossval.locomo_asked(samples, None, account_of),
                True,
            ),
            crossval.Asked(
                "LongMemEval",
                crossval.LONGMEMEVAL_METRICS,
                crossval.longmemeval_asked(questions, account_of, folds=2),
            ),
        ],
        {
            "LoCoMo": crossval.locomo_over_http(locomo),
            "LongMemEval": crossval.longmemeval_over_http(report["summary"]),
        },
        grid,
        lever={"source_weight": (0.0, 0.5)},
    )
    assert [fold["heldOut"] for fold in tuned["folds"]] == [
        {"LoCoMo": "smoke-1", "LongMemEval": "fold 1"},
        {"LoCoMo": "smoke-2", "LongMemEval": "fold 2"},
    ]
    found = tuned["datasets"]["LongMemEval"]
    assert [fold["questions"] for fold in found["folds"]] == [1, 1]
    assert found["shipped"] == crossval.longmemeval_over_http(report["summary"])
    assert set(found["crossValidated"]) == set(crossval.LONGMEMEVAL_METRICS)
    assert tuned["allData"]["k1"] in grid["k1"]
    # The lever cross-validated again beside it, and kept only if both datasets gain.
    lever = tuned["lever"]
    assert lever["report"]["allData"]["source_weight"] in (0.0, 0.5)
    assert set(lever["verdict"]["changes"]) == {"LoCoMo", "LongMemEval"}
    assert isinstance(lever["verdict"]["kept"], bool)


def test_the_ingest_benchmark_embeds_longmemevals_turns_as_they_are_saved(
    tmp_path: Path,
) -> None:
    """bench.ingest's long texts: the notes bench.longmemeval saves (dated, role-named,
    cut into pieces), each text once though haystacks share sessions, taken evenly."""
    from bench import ingest

    path = tmp_path / "questions.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        json.dump([*QUESTIONS, {**QUESTIONS[0], "question_id": "smoke-dog-again"}], stream)
    texts = ingest.long_turns(100, path)
    saved = [n.content for q in map(longmemeval.question_of, QUESTIONS[:2]) for n in q.notes]
    assert texts == saved
    assert texts[0].startswith("[2023/05/01 (Mon) 18:30] user: ")
    assert all(len(text) <= MAX_CONTENT_CHARS for text in texts)
    assert ingest.long_turns(3, path) == saved[:: len(saved) // 3][:3]

"""A small run of the LoCoMo quality benchmark, so it cannot rot.

A made-up sample in LoCoMo's layout (the real data is for evaluation only) goes the
benchmark's whole way: saved over REST, embedded by the real worker with MiniLM,
searched in the three modes, scored.
"""

from __future__ import annotations

import copy
from typing import Any

from bench import quality
from grove_db import embedded
from tests.support.clients import data_of
from tests.support.locomo import SAMPLE
from tests.support.tenants import new_tenant
from tests.support.waiting import wait_until


def test_the_quality_benchmark_runs_end_to_end(
    database: embedded.EmbeddedDatabase, hybrid_api_url: str, minilm_ask: str
) -> None:
    turns = quality.turns_of(SAMPLE)
    assert [t.content for t in turns[:2]] == [
        "Ana: I adopted a grey kitten named Pixel.",
        "Ben: Lovely! I started learning the cello.",
    ]
    assert turns[4].content == (
        "Ana: Look what Pixel did. [shared a photo: a photo of a broken vase on the floor]"
    )
    assert turns[3].date == "9:30 am on 10 March, 2024"
    questions = quality.questions_of(SAMPLE, [t.dia_id for t in turns])
    # Malformed evidence is split; missing turns dropped; a question left without any skipped.
    assert [sorted(q.evidence) for q in questions] == [["D1:1"], ["D1:2", "D2:1"], ["D1:3"]]

    keys: dict[str, Any] = {}
    account_of: dict[str, str] = {}

    def new_key(sample_id: str) -> str:
        tenant = new_tenant(database, hybrid_api_url)
        keys[tenant.client.key or ""] = tenant
        account_of[sample_id] = str(tenant.account_id)
        return tenant.client.key or ""

    def wait_ready(key: str, count: int) -> None:
        client = keys[key].client

        def ready() -> bool:
            items = data_of(client.get("/v1/memories?limit=100"))["items"]
            return len(items) == count and all(i["indexing"] == "ready" for i in items)

        wait_until(ready, timeout=60)

    # A second conversation (the same turns and questions), so one can be left out.
    other = {**copy.deepcopy(SAMPLE), "sample_id": "smoke-2"}
    summary = quality.run(hybrid_api_url, new_key, wait_ready, [SAMPLE, other])
    assert set(summary) == set(quality.MODES)
    for by_category in summary.values():
        overall = by_category["all"]
        assert overall["questions"] == 6
        assert 0 <= overall["recall@5"] <= overall["recall@50"] <= 100
    # Six notes: every mode finds every evidence turn within 50, and hybrid ranks well.
    assert summary["hybrid"]["all"]["recall@50"] == 100
    assert summary["hybrid"]["all"]["mrr"] > 0.5
    tenant = next(iter(keys.values()))
    saved = data_of(tenant.client.get("/v1/memories?limit=100"))["items"]
    refs = {item["provenance"]["sourceRef"] for item in saved}
    assert "locomo:smoke-1:D2:3" in refs
    assert quality.table(summary).splitlines()[-1].startswith("DRAGON")

    # Leave one conversation out, in-process, through the service's own functions: at the
    # shipped constants it scores what HTTP scored (else it exits), and each fold chose.
    grid: dict[str, tuple[Any, ...]] = {"lexical_weight": (0.0, 0.55, 1.0), "k1": (1.2, 2.0)}
    report = quality.cross_validation(
        database.runtime_url, minilm_ask, [SAMPLE, other], None, summary, account_of, grid
    )
    assert report is not None
    locomo = report["datasets"]["LoCoMo"]
    for k in quality.KS:
        assert locomo["shipped"][f"R@{k}"] == round(summary["hybrid"]["all"][f"recall@{k}"], 1)
    assert [fold["heldOut"] for fold in report["folds"]] == [
        {"LoCoMo": "smoke-1"},
        {"LoCoMo": "smoke-2"},
    ]
    assert all(fold["questions"] == 3 for fold in locomo["folds"])
    assert report["allData"]["lexical_weight"] in grid["lexical_weight"]
    one = quality.cross_validation(
        database.runtime_url, minilm_ask, [SAMPLE], None, summary, account_of, grid
    )
    assert one is None  # nothing to leave out

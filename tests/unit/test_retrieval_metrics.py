"""LongMemEval's retrieval metrics (``bench.retrieval_metrics``) against answers worked
by hand, so the benchmark's figures can be trusted.

The haystack of these examples: sessions A and B of two turns, C of one; the evidence
is turn 2 of A and turn 1 of C (so sessions A and C).
"""

from __future__ import annotations

import math

import pytest

from bench.retrieval_metrics import dcg, ndcg_any, recall_all, session_level, turn_level

A1, A2, B1, B2, C1 = ("A", 1), ("A", 2), ("B", 1), ("B", 2), ("C", 1)
CORPUS = [A1, A2, B1, B2, C1]
GOLD = {A2, C1}
RANKED = [B1, A2, C1, A1, B2]
LOG2_3 = math.log2(3)


def test_dcg_weighs_the_first_two_ranks_alike_as_the_benchmark_does() -> None:
    # 1 + 0/log2(2) + 1/log2(3) + 1/log2(4)
    assert dcg([1, 0, 1, 1], 4) == pytest.approx(1 + 1 / LOG2_3 + 0.5)
    assert dcg([0, 1], 2) == pytest.approx(1.0)  # rank 2 is not discounted
    assert dcg([1, 1, 1], 2) == pytest.approx(2.0)  # only the first k count
    assert dcg([], 5) == 0.0


def test_recall_all_needs_every_evidence_item_in_the_top_k() -> None:
    assert recall_all(RANKED, GOLD, 2) == 0.0  # A2 in, C1 at rank 3
    assert recall_all(RANKED, GOLD, 3) == 1.0
    assert recall_all(RANKED[:2], GOLD, 10) == 0.0  # a ranking cut short misses C1


def test_turn_level_recall_and_ndcg_on_a_worked_example() -> None:
    assert turn_level(RANKED, GOLD, CORPUS, 1) == (0.0, 0.0)
    recall, ndcg = turn_level(RANKED, GOLD, CORPUS, 3)
    # Top 3 relevances 0, 1, 1: DCG 1 + 1/log2(3); ideal 1, 1, 0: DCG 2.
    assert recall == 1.0
    assert ndcg == pytest.approx((1 + 1 / LOG2_3) / 2)  # 0.8155
    # A perfect ranking scores 1; no evidence at all scores nDCG 0.
    recall, ndcg = turn_level([A2, C1, A1], GOLD, CORPUS, 5)
    assert recall == 1.0
    assert ndcg == pytest.approx(1.0)
    assert ndcg_any(RANKED, set(), CORPUS, 5) == 0.0


def test_session_level_ranks_each_session_where_its_first_turn_ranks() -> None:
    # Sessions ranked B, A, C. At k = 2: B and A, C missing; relevances 0, 1 (DCG 1)
    # against the ideal order of the haystack's sessions A, B, C: 1, 1 (DCG 2).
    recall, ndcg = session_level(RANKED, GOLD, CORPUS, 2)
    assert recall == 0.0
    assert ndcg == pytest.approx(0.5)
    # At k = 3: B, A, C, all evidence in; DCG 1 + 1/log2(3) over 1 + 1.
    recall, ndcg = session_level(RANKED, GOLD, CORPUS, 3)
    assert recall == 1.0
    assert ndcg == pytest.approx((1 + 1 / LOG2_3) / 2)  # 0.8155


def test_session_level_reads_k_sessions_however_many_turns_that_takes() -> None:
    # Top 2 turns are both of A: the top 2 sessions are A and B (the benchmark widens k
    # to 3 turns for the same answer), so B counts at k = 2.
    ranked = [A1, A2, B1, C1]
    gold = {A2, B2}  # sessions A and B
    recall, ndcg = session_level(ranked, gold, CORPUS, 2)
    assert recall == 1.0
    assert ndcg == pytest.approx(1.0)
    # The turn level at k = 2 misses B2.
    assert turn_level(ranked, gold, CORPUS, 2)[0] == 0.0
    # A ranking that ends before k sessions is scored on what it holds.
    recall, ndcg = session_level([A1, A2], gold, CORPUS, 2)
    assert recall == 0.0
    assert ndcg == pytest.approx(1 / 2)

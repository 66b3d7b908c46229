"""LongMemEval's retrieval metrics, over one question's ranked turns.

The definitions are the benchmark's own (its ``src/retrieval/eval_utils.py``, read by
``print_retrieval_metrics.py``), so our figures sit beside the published ones:

- ``recall_all@k``: 1 when every evidence item is among the top k, else 0.
- ``ndcg_any@k``: DCG of the top k over the ideal DCG, relevance 1 for an evidence item;
  the benchmark's DCG weighs rank 1 and rank 2 alike (``rel[0] + sum(rel[i] /
  log2(i + 1))`` for ranks i + 1 >= 2), and the ideal is the best order of the whole
  corpus.
- Session level, from a turn ranking: each session ranks where its first turn ranks (the
  data README's definition), and a session is evidence when it holds an evidence turn.
  For recall_all this is the benchmark's ``evaluate_retrieval_turn2session`` (it widens k
  until the top k turns hold k sessions); for nDCG that function would count every turn
  of an evidence session as relevant, against an ideal of all of them, which is not what
  the published session-level figures (one document a session) measure, so the sessions
  are ranked once each, as those are.

A ranking is a list of turn IDs, best first; a turn ID is ``(session, turn)``. Pure
functions, no I/O, so the unit tests can check them against answers worked by hand.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)
#: One turn of a haystack: its session's ID and its index in that session.
TurnId = tuple[str, int]


def dcg(relevances: Sequence[float], k: int) -> float:
    """The benchmark's DCG of the first ``k`` relevances (ranks 1 and 2 weigh 1)."""
    top = relevances[:k]
    if not top:
        return 0.0
    return top[0] + sum(value / math.log2(rank) for rank, value in enumerate(top[1:], 2))


def ndcg_any(ranked: Sequence[T], gold: Collection[T], corpus: Sequence[T], k: int) -> float:
    """nDCG@k of ``ranked`` against the best order of ``corpus`` (0 without evidence)."""
    ideal = dcg(sorted((1.0 if item in gold else 0.0 for item in corpus), reverse=True), k)
    if ideal == 0:
        return 0.0
    return dcg([1.0 if item in gold else 0.0 for item in ranked], k) / ideal


def recall_all(ranked: Sequence[T], gold: Collection[T], k: int) -> float:
    """1.0 when every item of ``gold`` is in the top ``k`` of ``ranked``, else 0.0."""
    top = set(ranked[:k])
    return float(all(item in top for item in gold))


def turn_level(
    ranked: Sequence[TurnId], gold: Collection[TurnId], corpus: Sequence[TurnId], k: int
) -> tuple[float, float]:
    """``(recall_all@k, ndcg_any@k)`` of a turn ranking against the evidence turns."""
    return recall_all(ranked, gold, k), ndcg_any(ranked, gold, corpus, k)


def session_level(
    ranked: Sequence[TurnId], gold: Collection[TurnId], corpus: Sequence[TurnId], k: int
) -> tuple[float, float]:
    """``(recall_all@k, ndcg_any@k)`` at session level, from the turn ranking: each session
    ranks where its first turn ranks, against the haystack's sessions."""
    sessions = list(dict.fromkeys(session for session, _ in ranked))
    evidence = {session for session, _ in gold}
    everything = list(dict.fromkeys(session for session, _ in corpus))
    return recall_all(sessions, evidence, k), ndcg_any(sessions, evidence, everything, k)

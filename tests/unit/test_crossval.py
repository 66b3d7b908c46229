"""Leave-one-conversation-out tuning: a held-out conversation is scored only with what was
chosen without it."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import numpy as np

from bench import crossval, quality
from bench.crossval import SHIPPED, Question, Setting
from grove_memory import recall

WEIGHTS = {"lexical_weight": (0.4, SHIPPED.lexical_weight, 0.7)}


def test_each_conversation_is_scored_with_the_choice_made_without_it() -> None:
    # Conversation a is best at weight 0.4, b at 0.7; anything else scores half.
    conversations = ["a", "a", "b", "b"]
    best = {"a": 0.4, "b": 0.7}

    def recalls(setting: Setting) -> np.ndarray:
        hits = [1.0 if setting.lexical_weight == best[c] else 0.5 for c in conversations]
        return np.array([[hit] * len(quality.KS) for hit in hits])

    report = crossval.cross_validate(conversations, recalls, WEIGHTS)
    chosen = {fold["heldOut"]: fold["chosen"]["lexical_weight"] for fold in report["folds"]}
    assert chosen == {"a": 0.7, "b": 0.4}  # each chosen on the other conversation
    assert report["crossValidated"]["recall@5"] == 50.0  # so each held out scores half
    assert all(fold["heldOutRecall"]["recall@50"] == 50.0 for fold in report["folds"])
    # Chosen on both, in sample: the first of the two equal bests (0.4), scoring 75.
    assert report["allFive"]["chosen"]["lexical_weight"] == 0.4
    assert report["allFive"]["recall"]["recall@10"] == 75.0
    assert report["shipped"]["recall"]["recall@25"] == 50.0
    assert "cross-validated (5 folds)" in crossval.table(report)


def test_coordinate_ascent_moves_only_on_a_strict_gain() -> None:
    grid: dict[str, tuple[Any, ...]] = {
        "k1": (0.6, SHIPPED.k1, 2.0),
        "lexical_weight": (0.3, SHIPPED.lexical_weight, 0.8),
    }

    def objective(setting: Setting) -> float:
        return -((setting.k1 - 2.0) ** 2) - (setting.lexical_weight - 0.3) ** 2

    assert crossval.coordinate_ascent(objective, grid=grid) == dataclasses.replace(
        SHIPPED, k1=2.0, lexical_weight=0.3
    )
    assert crossval.coordinate_ascent(lambda _: 1.0, grid=grid) == SHIPPED  # ties stay


def row(turn: str, **values: Any) -> dict[str, Any]:
    return {
        "id": uuid.uuid4(),
        "source_ref": f"locomo:conv-1:{turn}",
        "updated_at": datetime(2026, 1, 1, tzinfo=UTC),
        **values,
    }


def test_candidates_are_cut_as_the_statements_would_return_them() -> None:
    lexical = [row("D1:1", score=3.0), row("D1:2", score=2.0), row("D1:3", score=1.0)]
    semantic = [row("D2:1", distance=0.2), row("D2:2", distance=0.5), row("D2:3", distance=0.9)]
    question = Question("conv-1", frozenset({"D1:3", "D2:3"}), semantic, [], {1.2: lexical})
    loose = Setting(
        k1=1.2, lexical_weight=0.6, max_distance=2.0, candidates=400, context_weight=0.0
    )
    assert sorted(crossval.ranked_turns(question, loose)) == [
        "D1:1",
        "D1:2",
        "D1:3",
        "D2:1",
        "D2:2",
        "D2:3",
    ]
    # Two of each, and the farthest semantic candidate over the threshold.
    tight = dataclasses.replace(loose, max_distance=0.75, candidates=2)
    assert crossval.ranked_turns(question, tight) == ["D1:1", "D2:1", "D1:2", "D2:2"]
    assert quality.recall_at(crossval.ranked_turns(question, tight), question.gold) == {
        5: 0,
        10: 0,
        25: 0,
        50: 0,
    }
    assert quality.recall_at(crossval.ranked_turns(question, loose), question.gold) == {
        5: 0.5,
        10: 1,
        25: 1,
        50: 1,
    }


def test_neighbours_count_only_for_the_candidates_taken() -> None:
    semantic = [row("D2:1", distance=0.2), row("D2:5", distance=0.3)]
    answer = row("D2:2", distance=0.95)  # "Take a look at this.", beside D2:1 only
    other = row("D2:6", distance=0.95)  # beside D2:5 only
    neighbours = [
        {**answer, "neighbour_of": semantic[0]["id"]},
        {**other, "neighbour_of": semantic[1]["id"]},
    ]
    question = Question("conv-1", frozenset({"D2:2"}), semantic, neighbours, {1.2: []})
    setting = Setting(
        k1=1.2, lexical_weight=0.5, max_distance=0.8, candidates=1, context_weight=0.3
    )
    # One candidate taken: its neighbour joins (0.05 + 0.3 * 0.8 -> distance 0.71 <= 0.8);
    # the other candidate's neighbour does not.
    assert crossval.ranked_turns(question, setting) == ["D2:1", "D2:2"]
    assert crossval.ranked_turns(question, dataclasses.replace(setting, context_weight=0.0)) == [
        "D2:1"
    ]


def test_no_lexical_weight_lets_notes_without_the_query_words_outrank_the_one_with_them() -> None:
    # The only note holding the query's words (an error code) is the farthest by meaning;
    # the closest note holds none of them. Above 0.5 the words win; at 0.5 the two tie
    # (then rank, recency and ID decide); below it meaning wins.
    rare = row("D1:1", score=4.2, distance=0.9, context_distance=0.9)
    close = row("D1:2", distance=0.3, context_distance=0.3)

    def first(weight: float) -> str:
        fused = recall.fuse([rare], [close, rare], weight)
        return str(fused[0].row["source_ref"])

    for weight in {SHIPPED.lexical_weight, *crossval.GRID["lexical_weight"]}:
        assert weight > 0.5
        assert first(weight) == rare["source_ref"], weight
    assert first(0.45) == first(0.4) == close["source_ref"]

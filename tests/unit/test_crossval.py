"""Leave-one-conversation-out tuning: a held-out conversation is scored only with what was
chosen without it."""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from bench import crossval
from bench.crossval import SHIPPED, Question, Setting
from bench.quality import dia_id, recall_at
from grove_memory.search import recall

WEIGHTS = {"lexical_weight": (0.4, SHIPPED.lexical_weight, 0.7)}


def constant(
    name: str, folds: list[str], best: dict[str, float], percent: bool = False
) -> crossval.Dataset:
    """A dataset whose question scores 1 at its fold's best lexical weight, else 0.5."""

    def scores(setting: Setting) -> np.ndarray:
        hits = [1.0 if setting.lexical_weight == best[f] else 0.5 for f in folds]
        return np.array([[hit] * len(crossval.LOCOMO_METRICS) for hit in hits])

    return crossval.Dataset(name, crossval.LOCOMO_METRICS, folds, scores, percent)


def test_each_conversation_is_scored_with_the_choice_made_without_it() -> None:
    # Conversation a is best at weight 0.4, b at 0.7; anything else scores half.
    locomo = constant("LoCoMo", ["a", "a", "b", "b"], {"a": 0.4, "b": 0.7}, percent=True)
    report = crossval.cross_validate([locomo], WEIGHTS)
    chosen = {
        fold["heldOut"]["LoCoMo"]: fold["chosen"]["lexical_weight"] for fold in report["folds"]
    }
    assert chosen == {"a": 0.7, "b": 0.4}  # each chosen on the other conversation
    found = report["datasets"]["LoCoMo"]
    assert found["crossValidated"]["R@5"] == 50.0  # so each held out scores half
    assert all(fold["heldOutFigures"]["R@50"] == 50.0 for fold in found["folds"])
    # Chosen on both, in sample: the first of the two equal bests (0.4), scoring 75.
    assert report["allData"]["lexical_weight"] == 0.4
    assert found["allData"]["R@10"] == 75.0
    assert found["shipped"]["R@25"] == 50.0
    assert "cross-validated (2 folds)" in crossval.table(report, [locomo])


def test_a_joint_fold_is_chosen_without_either_datasets_held_out_questions() -> None:
    # Joint fold 1 holds out LoCoMo's conversation a and LongMemEval's fold 1, fold 2 the
    # others. Each held-out part is best at the weight its own fold's training data
    # cannot see: chosen without it, every held-out question scores half.
    locomo = constant("LoCoMo", ["a", "b"], {"a": 0.4, "b": 0.7})
    longmemeval = constant("LongMemEval", ["fold 1", "fold 2"], {"fold 1": 0.4, "fold 2": 0.7})
    report = crossval.cross_validate([locomo, longmemeval], WEIGHTS)
    assert [fold["heldOut"] for fold in report["folds"]] == [
        {"LoCoMo": "a", "LongMemEval": "fold 1"},
        {"LoCoMo": "b", "LongMemEval": "fold 2"},
    ]
    assert [fold["chosen"]["lexical_weight"] for fold in report["folds"]] == [0.7, 0.4]
    for name in ("LoCoMo", "LongMemEval"):
        assert report["datasets"][name]["crossValidated"]["R@5"] == 0.5
        assert report["datasets"][name]["allData"]["R@5"] == 0.75
    lines = crossval.table(report, [locomo, longmemeval]).splitlines()
    assert "chosen without a and fold 1: k1 1.2, lexical_weight 0.7," in "\n".join(lines)


def test_each_dataset_weighs_alike_however_many_questions_it_has() -> None:
    # LoCoMo's 100 questions gain a little at 0.4 (0.6 against 0.5); LongMemEval's 2 lose
    # much there (0 against 1). Pooled by question 0.4 would win; by dataset it loses.
    def scores_of(at_04: float, elsewhere: float, count: int) -> crossval.Dataset:
        def scores(setting: Setting) -> np.ndarray:
            value = at_04 if setting.lexical_weight == 0.4 else elsewhere
            return np.full((count, 1), value)

        return crossval.Dataset("d", ("m",), ["x"] * count, scores)

    locomo, longmemeval = scores_of(0.6, 0.5, 100), scores_of(0.0, 1.0, 2)
    masks = {"d": np.ones(100, dtype=bool)}
    assert (
        crossval.objective([locomo], masks)(dataclasses.replace(SHIPPED, lexical_weight=0.4)) == 0.6
    )
    both = [locomo, dataclasses.replace(longmemeval, name="e")]
    masks |= {"e": np.ones(2, dtype=bool)}
    assert crossval.coordinate_ascent(crossval.objective(both, masks), grid=WEIGHTS) == SHIPPED


def test_datasets_with_different_numbers_of_folds_are_refused() -> None:
    locomo = constant("LoCoMo", ["a", "b", "c"], {"a": 0.4, "b": 0.4, "c": 0.4})
    longmemeval = constant("LongMemEval", ["fold 1", "fold 2"], {"fold 1": 0.4, "fold 2": 0.4})
    with pytest.raises(ValueError, match="different numbers of folds"):
        crossval.joint_folds([locomo, longmemeval])


def test_longmemeval_folds_spread_each_question_type_across_the_folds() -> None:
    kinds = ["multi"] * 7 + ["temporal"] * 5 + ["update"] * 3 + ["single"] * 1
    labels = crossval.folds_of(kinds, 5)
    assert labels == crossval.folds_of(kinds, 5)  # seeded: the same split every run
    assert labels != crossval.folds_of(kinds, 5, seed=7)
    sizes = Counter(labels)
    assert set(sizes) == {f"fold {n}" for n in range(1, 6)}
    assert max(sizes.values()) - min(sizes.values()) <= 1
    for kind in set(kinds):
        per_fold = Counter(label for label, k in zip(labels, kinds, strict=True) if k == kind)
        count = kinds.count(kind)
        # Every fold has its share of the type: count // 5 or one more.
        assert all(
            per_fold.get(f"fold {n}", 0) in (count // 5, count // 5 + 1) for n in range(1, 6)
        )


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


def turns(question: Question, setting: Setting) -> list[str]:
    return [dia_id(ref) for ref in crossval.ranked_refs(question, setting)]


def test_candidates_are_cut_as_the_statements_would_return_them() -> None:
    lexical = [row("D1:1", score=3.0), row("D1:2", score=2.0), row("D1:3", score=1.0)]
    semantic = [row("D2:1", distance=0.2), row("D2:2", distance=0.5), row("D2:3", distance=0.9)]
    question = Question("conv-1", lambda refs: [], semantic, [], {1.2: lexical})
    gold = frozenset({"D1:3", "D2:3"})
    loose = Setting(
        k1=1.2, lexical_weight=0.6, max_distance=2.0, candidates=400, context_weight=0.0
    )
    assert sorted(turns(question, loose)) == [
        "D1:1",
        "D1:2",
        "D1:3",
        "D2:1",
        "D2:2",
        "D2:3",
    ]
    # Two of each, and the farthest semantic candidate over the threshold.
    tight = dataclasses.replace(loose, max_distance=0.75, candidates=2)
    assert turns(question, tight) == ["D1:1", "D2:1", "D1:2", "D2:2"]
    assert recall_at(turns(question, tight), gold) == {
        5: 0,
        10: 0,
        25: 0,
        50: 0,
    }
    assert recall_at(turns(question, loose), gold) == {
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
    question = Question("conv-1", lambda refs: [], semantic, neighbours, {1.2: []})
    setting = Setting(
        k1=1.2, lexical_weight=0.5, max_distance=0.8, candidates=1, context_weight=0.3
    )
    # One candidate taken: its neighbour joins (0.05 + 0.3 * 0.8 -> distance 0.71 <= 0.8);
    # the other candidate's neighbour does not.
    assert turns(question, setting) == ["D2:1", "D2:2"]
    assert turns(question, dataclasses.replace(setting, context_weight=0.0)) == ["D2:1"]


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


def test_the_lever_raises_a_candidates_whole_source_with_its_best_one() -> None:
    # Session s holds the best candidate; t's candidate scores a little above s's second.
    best = recall.Candidate({**row("D1:1"), "source_agent": "s"}, score=1.0)
    second = recall.Candidate({**row("D1:2"), "source_agent": "s"}, score=0.5)
    other = recall.Candidate({**row("D2:1"), "source_agent": "t"}, score=0.6)
    alone = recall.Candidate({**row("D3:1"), "source_agent": None}, score=0.55)
    fused = [best, other, alone, second]
    assert crossval.by_source(fused, 0.0) == fused  # the service's ranking
    # s's second: 0.5 + 0.3 * 1.0 = 0.8, over t's 0.6 + 0.3 * 0.6 = 0.78 and the lone
    # note's 0.55 + 0.3 * 0.55 = 0.715 (its own best).
    assert crossval.by_source(fused, 0.3) == [best, second, other, alone]


def test_a_lever_is_kept_only_if_every_datasets_held_out_figures_rise() -> None:
    def report(locomo: float, longmemeval: float) -> dict[str, Any]:
        return {
            "datasets": {
                "LoCoMo": {"crossValidated": {"R@5": locomo, "R@10": locomo}},
                "LongMemEval": {"crossValidated": {"turn R_all@10": longmemeval}},
            }
        }

    before = report(60.0, 0.6)
    assert crossval.verdict(before, report(61.0, 0.633))["kept"]
    assert not crossval.verdict(before, report(63.0, 0.6))["kept"]  # no gain on one
    assert not crossval.verdict(before, report(61.0, 0.567))["kept"]
    assert crossval.verdict(before, report(61.0, 0.633))["changes"]["LongMemEval"] == {
        "turn R_all@10": 0.033
    }

"""Near-duplicate scoring (``grove_memory.notes.duplicates``) and the leave-one-group-out choice
of its thresholds (``bench.duplicates``): a held-out group is scored only with thresholds
chosen without it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench import duplicates as bench
from grove_memory.notes import duplicates
from grove_memory.notes.duplicates import is_near_duplicate, lexical_similarity, words


def test_words_are_normalised() -> None:
    assert words("Deploys happen on Tue/Thu at 3pm") == {
        "deploy",
        "happen",
        "tuesday",
        "thursday",
        "15h00",
    }
    assert words("the deploy happens on Tuesday, Thursday at 15:00") == words(
        "Deploys happen on Tue/Thu at 3 pm"
    )
    assert words("2,000 A100 hours") == words("2000 a100 hours") == {"2000", "a100", "hour"}
    assert words("$3k bonus") == {"3000", "bonu"}
    assert words("six nodes") == words("6 nodes") == {"6", "nod"}
    assert words("Alex's kids") == {"alex", "kid"}
    assert "not" in words("breakfast not included")  # negations count
    assert words("") == words("the and of") == set()


def test_identical_texts_are_1_and_disjoint_ones_0() -> None:
    text = "Invoices are generated on the 1st of each month at 06:00 UTC."
    assert lexical_similarity(text, text) == 1.0
    assert lexical_similarity(text, text.upper()) == 1.0  # case-insensitive
    assert lexical_similarity(text, "Alex prefers window seats on flights.") == 0.0
    assert lexical_similarity("", "") == 1.0
    assert lexical_similarity("", text) == 0.0


def test_lexical_similarity_is_symmetric_and_in_0_1() -> None:
    texts = [
        "Production deploys happen on Tuesdays and Thursdays after the change review.",
        "We only deploy to prod on Tue/Thu, right after the change review meeting.",
        "Deploy freeze from December 20 to January 5.",
        "",
    ]
    for a in texts:
        for b in texts:
            value = lexical_similarity(a, b)
            assert 0.0 <= value <= 1.0
            assert value == lexical_similarity(b, a)


def test_a_changed_number_weighs_more_than_a_changed_word() -> None:
    base = "Weekly sync with Lindqvist is Thursdays at 3pm in room 412"
    other_word = "Weekly sync with Lindqvist is Fridays at 3pm in room 412"
    other_number = "Weekly sync with Lindqvist is Thursdays at 4pm in room 412"
    assert lexical_similarity(base, other_number) < lexical_similarity(base, other_word)
    # weekly sync lindqvist thursday 15h00 room 412 ("is", "at", "in", "with" are stopwords);
    # the time and the room weigh 2: 8 shared of 10, against 7 of 11.
    assert lexical_similarity(base, other_word) == pytest.approx(8 / 10)
    assert lexical_similarity(base, other_number) == pytest.approx(7 / 11)


def test_the_proposer_needs_both_signals() -> None:
    high, low = duplicates.COSINE_THRESHOLD, duplicates.LEXICAL_THRESHOLD
    assert is_near_duplicate(high, low)
    assert not is_near_duplicate(high - 0.01, 1.0)
    assert not is_near_duplicate(1.0, low - 0.01)


def test_the_module_is_pure_python() -> None:
    code = (
        "import sys, grove_memory.notes.duplicates; "
        "heavy = {'numpy', 'torch', 'sentence_transformers'} & set(sys.modules); "
        "sys.exit(', '.join(sorted(heavy)) or None)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# Synthetic pairs: in group "a" duplicates sit at lexical 0.6 and negatives at 0.4, in "b"
# duplicates at 0.4 and negatives at 0.2 (every cosine 0.9). Chosen on a the threshold is
# above 0.4, which misses all of b; chosen on b it is 0.4 or below, which flags a's
# negatives.
PAIRS = [
    ("a", 0.6, True),
    ("a", 0.6, True),
    ("a", 0.4, False),
    ("a", 0.4, False),
    ("b", 0.4, True),
    ("b", 0.4, True),
    ("b", 0.2, False),
    ("b", 0.2, False),
]
GRID = (0.1, 0.3, 0.5, 0.7)


def synthetic() -> bench.Scores:
    return bench.scores_of(
        [group for group, _, _ in PAIRS],
        [0.9] * len(PAIRS),
        [lexical for _, lexical, _ in PAIRS],
        [duplicate for _, _, duplicate in PAIRS],
    )


def test_each_group_is_scored_with_the_thresholds_chosen_without_it() -> None:
    report = bench.cross_validate(synthetic(), bench.NO_COSINE, GRID)
    chosen = {fold["heldOut"]: fold["chosen"]["lexical"] for fold in report["folds"]}
    assert chosen == {"a": 0.3, "b": 0.5}  # a chosen on b, b on a: the strictest that fits
    held_out = {fold["heldOut"]: fold["heldOutFigures"] for fold in report["folds"]}
    assert held_out["a"] == {"tp": 2, "fp": 2, "fn": 0, "precision": 0.5, "recall": 1.0}
    assert held_out["b"] == {"tp": 0, "fp": 0, "fn": 2, "precision": 1.0, "recall": 0.0}
    assert report["crossValidated"] == {
        "tp": 2,
        "fp": 2,
        "fn": 2,
        "precision": 0.5,
        "recall": 0.5,
    }
    # On both groups together 0.3 flags a's negatives (precision 4/6), so the choice is
    # 0.5: all of a's duplicates, none of b's.
    assert report["allGroups"]["chosen"] == {"cosine": -1.0, "lexical": 0.5}
    assert report["allGroups"]["figures"]["recall"] == 0.5


def test_the_choice_maximises_recall_at_the_precision_then_prefers_strict() -> None:
    scores = bench.scores_of(
        ["g"] * 5,
        [0.9, 0.8, 0.7, 0.9, 0.6],
        [0.5, 0.5, 0.5, 0.1, 0.5],
        [True, True, True, False, False],
    )
    # Lexical 0.3 excludes the negative at 0.1; cosine 0.7 excludes the one at 0.6 and keeps
    # every duplicate; 0.65 would too, but ties go to the stricter threshold.
    assert bench.choose(scores, (0.5, 0.65, 0.7, 0.8), (0.0, 0.3, 0.6)) == (0.7, 0.3)
    # No setting reaches precision 0.9 without the cosine: the most precise one is taken.
    assert bench.choose(scores, bench.NO_COSINE, (0.0, 0.3)) == (-1.0, 0.3)
    assert bench.evaluate(scores, -1.0, 0.3) == bench.Figures(tp=3, fp=1, fn=0)


def test_the_tables_print() -> None:
    report = bench.evaluation(synthetic())
    text = bench.table("proposer", report["proposer"], with_cosine=True)
    assert "cross-validated (pooled folds)" in text
    assert "all groups, shipped constants" in text


def test_long_words_are_counted_but_not_cached() -> None:
    long = "x" * (duplicates.CACHED_WORD_CHARS + 1)
    duplicates._cached_normal.cache_clear()  # not full, whatever ran before
    cached = duplicates._cached_normal.cache_info
    before = cached().currsize
    assert duplicates.words(f"{long}s") == {long}
    assert cached().currsize == before
    assert duplicates.words(f"{long[2:]}s") == {long[2:]}  # 40 characters: cached
    assert cached().currsize == before + 1

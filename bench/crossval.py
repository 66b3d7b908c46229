"""Leave-one-conversation-out choice of the retrieval constants tuned on LoCoMo.

Hybrid search has five constants that were fitted on the five dev conversations: BM25's
``k1``, fusion's lexical weight, the semantic distance threshold, the candidates taken
from each signal and the weight of a candidate's neighbours (BM25's length normalization
``b`` was a sixth until every fold chose 0 and the statement dropped it). Here each
is chosen on four conversations and scored on the fifth, for each fifth in turn: the
**cross-validated** figure says what the tuning is worth on a conversation it never saw;
the **all-five** figure (chosen and scored on all five) is the one that flatters.

Search runs in-process exactly as ``POST /v1/memories/search`` composes it
(``recall.lexical_candidates``, ``recall.semantic_rows``, ``recall.neighbour_rows``,
``recall.in_context``, ``recall.fuse``, the same
statements as the runtime role under row-level security), so hundreds of settings are
scored without HTTP: each question's candidates are read once per k1 with the
largest candidate count (and the semantic ones' neighbours), then cut (both lists are
ordered, so a prefix is what a smaller ``LIMIT`` returns; the threshold and the neighbours'
weight apply to it through the service's own ``recall.in_context``). At the shipped
constants the figures match ``bench.quality``'s over HTTP.

Choice: coordinate ascent from the shipped constants (each constant in turn takes the
best of its grid values when that raises the objective; passes repeat until one changes
nothing). Objective: the mean of R@5, R@10, R@25 and R@50 over the training questions.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.quality import KS, PAGE, dia_id, recall_at
from grove_auth.principal import Principal
from grove_db.pool import open_pool, transaction
from grove_memory import recall
from grove_memory.store import DEFAULT_LEXICAL_WEIGHT, DEFAULT_MAX_DISTANCE, Store


@dataclass(frozen=True)
class Setting:
    """One value for each tuned constant."""

    k1: float
    lexical_weight: float
    max_distance: float
    candidates: int
    context_weight: float


SHIPPED = Setting(
    k1=recall.BM25_K1,
    lexical_weight=DEFAULT_LEXICAL_WEIGHT,
    max_distance=DEFAULT_MAX_DISTANCE,
    candidates=recall.SEARCH_CANDIDATES,
    context_weight=recall.CONTEXT_WEIGHT,
)

#: The values each constant may take (the shipped one among them). The lexical weight
#: stays above 0.5, a rule of the product rather than a fit (see store.py): LoCoMo's
#: folds would pick 0.4-0.45, +0.9 R@5, and lose exact identifiers first.
GRID: dict[str, tuple[Any, ...]] = {
    "k1": (0.6, 0.9, 1.2, 1.6, 2.0),
    "lexical_weight": (0.55, 0.6, 0.65, 0.7, 0.8),
    "max_distance": (0.6, 0.65, 0.7, 0.75, 0.8, 0.9, 2.0),
    "candidates": (50, 100, 200, 400, 800),
    "context_weight": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0),
}


@dataclass
class Question:
    """One question's gold turns and its candidates as the service's statements return them."""

    conversation: str
    gold: frozenset[str]
    #: The nearest notes (no threshold), nearest first, and their neighbours.
    semantic: list[dict[str, Any]]
    neighbours: list[dict[str, Any]]
    lexical: dict[float, list[dict[str, Any]]]


def ranked_turns(question: Question, setting: Setting) -> list[str]:
    """The dia_ids of the top 50 fused results under ``setting``."""
    lexical = question.lexical[setting.k1][: setting.candidates]
    nearest = question.semantic[: setting.candidates]
    taken = {row["id"] for row in nearest}
    neighbours = [row for row in question.neighbours if row["neighbour_of"] in taken]
    semantic = recall.in_context(nearest, neighbours, setting.context_weight, setting.max_distance)
    fused = recall.fuse(lexical, semantic, setting.lexical_weight)
    return [dia_id(c.row["source_ref"]) for c in fused[:PAGE]]


def coordinate_ascent(
    objective: Callable[[Setting], float],
    start: Setting = SHIPPED,
    grid: dict[str, tuple[Any, ...]] = GRID,
) -> Setting:
    """The setting reached from ``start`` by improving one constant at a time."""
    best, score = start, objective(start)
    changed = True
    while changed:
        changed = False
        for name, values in grid.items():
            for value in values:
                trial = dataclasses.replace(best, **{name: value})
                trial_score = objective(trial)
                if trial_score > score + 1e-12:
                    best, score, changed = trial, trial_score, True
    return best


def cross_validate(
    conversations: Sequence[str],
    recalls: Callable[[Setting], np.ndarray],
    grid: dict[str, tuple[Any, ...]] = GRID,
) -> dict[str, Any]:
    """Leave one conversation out: choose on the others, score on it.

    ``conversations[i]`` names question i's conversation; ``recalls(setting)`` gives the
    (questions x len(KS)) recall matrix under a setting. The answer has each fold's choice
    and held-out figures, the pooled held-out (cross-validated) figures, and the choice on
    all conversations with its in-sample figures.
    """
    labels = np.array(conversations)

    def objective(mask: np.ndarray) -> Callable[[Setting], float]:
        return lambda setting: float(recalls(setting)[mask].mean())

    held_out = np.zeros((len(labels), len(KS)))
    folds = []
    for name in sorted(set(conversations)):
        test = labels == name
        chosen = coordinate_ascent(objective(~test), grid=grid)
        held_out[test] = recalls(chosen)[test]
        folds.append(
            {
                "heldOut": name,
                "questions": int(test.sum()),
                "chosen": dataclasses.asdict(chosen),
                "heldOutRecall": figures(recalls(chosen)[test]),
                "shippedRecall": figures(recalls(SHIPPED)[test]),
            }
        )
    everything = np.ones(len(labels), dtype=bool)
    chosen = coordinate_ascent(objective(everything), grid=grid)
    # What each change from the shipped constants is worth: the choice with it undone.
    undone = {
        name: figures(recalls(dataclasses.replace(chosen, **{name: getattr(SHIPPED, name)})))
        for name in grid
        if getattr(chosen, name) != getattr(SHIPPED, name)
    }
    return {
        "folds": folds,
        "crossValidated": figures(held_out),
        "allFive": {
            "chosen": dataclasses.asdict(chosen),
            "recall": figures(recalls(chosen)),
            "eachChangeUndone": undone,
        },
        "shipped": {"setting": dataclasses.asdict(SHIPPED), "recall": figures(recalls(SHIPPED))},
    }


def figures(matrix: np.ndarray) -> dict[str, float]:
    """Mean recall@k in percent, rounded to 0.1."""
    return {f"recall@{k}": round(100 * float(matrix[:, i].mean()), 1) for i, k in enumerate(KS)}


class Evaluator:
    """Every question's candidates, read once per k1; recall matrices per setting."""

    def __init__(
        self,
        questions: list[Question],
        read_lexical: Callable[[int, float], Any],
        close: Callable[[], None],
    ):
        self.questions = questions
        self._read_lexical = read_lexical
        self._cache: dict[Setting, np.ndarray] = {}
        self.close = close

    def recalls(self, setting: Setting) -> np.ndarray:
        """(questions x len(KS)) recall under ``setting``."""
        if setting not in self._cache:
            for index, question in enumerate(self.questions):
                if setting.k1 not in question.lexical:
                    question.lexical[setting.k1] = self._read_lexical(index, setting.k1)
            self._cache[setting] = np.array(
                [list(recall_at(ranked_turns(q, setting), q.gold).values()) for q in self.questions]
            )
        return self._cache[setting]


def collect(
    runtime_url: str,
    profile: str,
    embed: Callable[[str], list[float]],
    asked: Iterable[tuple[str, str, str, frozenset[str]]],
) -> Evaluator:
    """Read each question's semantic candidates now and its lexical ones on demand.

    ``asked`` gives (conversation, account id, question, gold turns); ``embed`` the query
    vector (the service's own inference). Candidates are read through the service's
    functions, as the runtime role, one tenant transaction per read.
    """
    pool = open_pool(runtime_url, max_size=1)
    store = Store(pool=pool, cursor_secret=b"-" * 32, profile=profile, max_distance=2.0)
    largest = {"limit": max(int(n) for n in GRID["candidates"])}
    rows: list[tuple[Principal, str]] = []
    questions = []
    for conversation, account_id, text, gold in asked:
        account = uuid.UUID(account_id)
        principal = Principal(account, uuid.uuid4(), personal=True, all_notebooks=True)
        words, _ = recall.search_words(text)
        vector = recall.QueryVector(embed(words), None)
        assert vector.vector is not None
        with transaction(pool, account) as conn:
            semantic = recall.semantic_rows(conn, store, principal, vector.vector, "true", largest)
            neighbours = recall.neighbour_rows(
                conn, store, principal, vector.vector, "true", largest, semantic
            )
        rows.append((principal, words))
        questions.append(Question(conversation, gold, slim(semantic), slim(neighbours), {}))

    def read_lexical(index: int, k1: float) -> list[dict[str, Any]]:
        principal, words = rows[index]
        with transaction(pool, principal.account_id) as conn:
            return slim(recall.lexical_candidates(conn, principal, words, "true", largest, k1=k1))

    return Evaluator(questions, read_lexical, pool.close)


#: What ranking and scoring read of a candidate row; the rest (content, provenance, ...)
#: is dropped, or 997 questions' 800 candidates per k1 and their neighbours held
#: over 17 GB.
KEPT = ("id", "source_ref", "updated_at", "score", "terms", "distance", "neighbour_of")


def slim(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: row[key] for key in KEPT if key in row} for row in rows]


def table(report: dict[str, Any]) -> str:
    """Per fold and overall, the figures as a fixed-width table."""
    head = f"{'':<44}" + "".join(f"{'R@' + str(k):>8}" for k in KS)
    lines = [head, "-" * len(head)]

    def line(label: str, recall_figures: dict[str, float]) -> str:
        return f"{label:<44}" + "".join(f"{recall_figures[f'recall@{k}']:>8.1f}" for k in KS)

    for fold in report["folds"]:
        lines.append(line(f"{fold['heldOut']} held out, chosen on 4", fold["heldOutRecall"]))
        lines.append(line(f"{fold['heldOut']} at the shipped constants", fold["shippedRecall"]))
    lines.append(line("cross-validated (5 folds)", report["crossValidated"]))
    lines.append(line("all five, chosen on all five", report["allFive"]["recall"]))
    for name, undone in report["allFive"]["eachChangeUndone"].items():
        shipped = report["shipped"]["setting"][name]
        lines.append(line(f"all five, chosen but {name} {shipped}", undone))
    lines.append(line("all five, shipped constants", report["shipped"]["recall"]))
    lines.append("")
    for fold in report["folds"]:
        lines.append(f"chosen without {fold['heldOut']}: {describe(fold['chosen'])}")
    lines.append(f"chosen on all five: {describe(report['allFive']['chosen'])}")
    lines.append(f"shipped: {describe(report['shipped']['setting'])}")
    return "\n".join(lines)


def describe(setting: dict[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in setting.items())

"""Cross-validated choice of the retrieval constants, on LoCoMo and LongMemEval together.

Hybrid search has five tuned constants: BM25's ``k1``, fusion's lexical weight, the
semantic distance threshold, the candidates taken from each signal and the weight of a
candidate's neighbours (BM25's length normalization ``b`` was a sixth until every fold
chose 0 and the statement dropped it). Each is chosen by cross-validation: LoCoMo's
questions are held out a conversation at a time, LongMemEval's in ``FOLDS`` seeded folds
of questions with every question type spread across them (``folds_of``), and fold j of
the cross-validation holds out LoCoMo's j-th conversation and LongMemEval's j-th fold at
once, so every choice is made without both (``joint_folds``). The **cross-validated**
figures (each dataset's held-out folds pooled) say what the tuning is worth on what it
never saw; the **all-data** figures (chosen and scored on everything) are the ones that
flatter, and the table prints both so the gap shows.

Choice: coordinate ascent from the shipped constants (each constant in turn takes the
best of its grid values when that raises the objective; passes repeat until one changes
nothing). One objective (``objective``): the mean over the datasets of each one's mean
figure on its training questions (LoCoMo: R@5, R@10, R@25, R@50; LongMemEval: session
recall_all@5 and @10, ndcg_any@5, turn recall_all@10), so each dataset weighs the same
however many questions it has. A change to the ranking is kept only if it raises the
cross-validated figures of both datasets (bench/README.md, "Tried").

Search runs in-process exactly as ``POST /v1/memories/search`` composes it
(``recall.lexical_candidates``, ``recall.semantic_rows``, ``recall.neighbour_rows``,
``recall.in_context``, ``recall.fuse``, the same statements as the runtime role under
row-level security), so hundreds of settings are scored without HTTP: each question's
candidates are read once per k1 with the largest candidate count (and the semantic
ones' neighbours), then cut (both lists are ordered, so a prefix is what a smaller
``LIMIT`` returns; the threshold and the neighbours' weight apply to it through the
service's own ``recall.in_context``). At the shipped constants the figures must match
those over HTTP (``strays``).

``python -m bench.crossval --questions N --keep DIR`` saves LoCoMo's five conversations
and the first N LongMemEval questions of the seeded shuffle, embeds them, scores them
over HTTP and cross-validates, keeping the embedded store in DIR; ``--reuse DIR`` scores
that store again without saving anything (``bench.kept`` refuses a stale one).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import kept, longmemeval, quality, stack
from bench.quality import KS, PAGE, dia_id, questions_of, recall_at, turns_of
from grove_auth.principal import Principal
from grove_db.pool import open_pool, transaction
from grove_memory.search import recall
from grove_memory.store import DEFAULT_LEXICAL_WEIGHT, DEFAULT_MAX_DISTANCE, Store


@dataclass(frozen=True)
class Setting:
    """One value for each tuned constant."""

    k1: float
    lexical_weight: float
    max_distance: float
    candidates: int
    context_weight: float
    #: The lever tried (bench/README.md, "Tried"): a candidate's score gains this times
    #: the best score among its source's candidates (a LoCoMo or LongMemEval session), so
    #: the turns of the sessions that match best rise together. 0: the service's ranking.
    source_weight: float = 0.0


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
#: The lever's constant, added to ``GRID`` when it is tried (``--lever``).
LEVER: dict[str, tuple[Any, ...]] = {"source_weight": (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)}


@dataclass
class Question:
    """One question's candidates as the service's statements return them, and how a
    ranking of them is scored."""

    #: The fold it is held out in (LoCoMo: its conversation).
    fold: str
    #: The question's figures (its dataset's ``metrics``) for notes ranked by source ref.
    score: Callable[[list[str]], Sequence[float]]
    #: The nearest notes (no threshold), nearest first, and their neighbours.
    semantic: list[dict[str, Any]]
    neighbours: list[dict[str, Any]]
    lexical: dict[float, list[dict[str, Any]]]


#: What ``collect`` reads a question from: (fold, account ID, text, score).
AskedQuestion = tuple[str, str, str, Callable[[list[str]], Sequence[float]]]


def ranked_refs(question: Question, setting: Setting) -> list[str]:
    """The source refs of the top 50 fused results under ``setting``."""
    lexical = question.lexical[setting.k1][: setting.candidates]
    nearest = question.semantic[: setting.candidates]
    taken = {row["id"] for row in nearest}
    neighbours = [row for row in question.neighbours if row["neighbour_of"] in taken]
    semantic = recall.in_context(nearest, neighbours, setting.context_weight, setting.max_distance)
    fused = recall.fuse(lexical, semantic, setting.lexical_weight)
    return [str(c.row["source_ref"]) for c in by_source(fused, setting.source_weight)[:PAGE]]


def by_source(fused: list[recall.Candidate], weight: float) -> list[recall.Candidate]:
    """``fused`` ranked again with each score plus ``weight`` times the best score among
    the candidates of its source (a note without a source is its own); ties keep the
    fused order."""
    if not weight:
        return fused
    best: dict[Any, float] = {}
    for candidate in fused:
        source = candidate.row.get("source_agent") or candidate.row["id"]
        best[source] = max(best.get(source, 0.0), candidate.score)
    boosted = {
        id(c): c.score + weight * best[c.row.get("source_agent") or c.row["id"]] for c in fused
    }
    return sorted(fused, key=lambda c: -boosted[id(c)])


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


@dataclass(frozen=True)
class Dataset:
    """One benchmark's questions as the tuning sees them.

    ``scores(setting)`` is the (questions x ``metrics``) matrix of each question's figures
    under a setting, ``folds[i]`` the fold question i is held out in. A dataset's
    objective is the mean of its matrix: every metric and question alike."""

    name: str
    metrics: tuple[str, ...]
    folds: Sequence[str]
    scores: Callable[[Setting], np.ndarray]
    #: Figures print in percent to 0.1 (LoCoMo's recall) or as fractions to 0.001.
    percent: bool = False


def joint_folds(datasets: Sequence[Dataset]) -> list[dict[str, str]]:
    """The folds of the cross-validation: fold j holds out each dataset's j-th fold
    (fold labels in sorted order), so every choice is made without both held-out parts.
    Every dataset must have the same number of folds."""
    labels = {d.name: sorted(set(d.folds)) for d in datasets}
    counts = {len(found) for found in labels.values()}
    if len(counts) != 1:
        raise ValueError(f"the datasets have different numbers of folds: {labels}")
    return [{name: found[j] for name, found in labels.items()} for j in range(counts.pop())]


def objective(
    datasets: Sequence[Dataset], masks: dict[str, np.ndarray]
) -> Callable[[Setting], float]:
    """The one objective every constant is chosen by: the mean over the datasets of each
    one's objective on the questions its mask selects.

    Each dataset weighs the same however many questions it has (LoCoMo's 997 against
    LongMemEval's 30-147), so a setting cannot buy a LoCoMo point with a LongMemEval loss
    of many; and one objective rather than a rule that a move must win on both datasets,
    because coordinate ascent under such a rule stalls wherever the two disagree by noise.
    Whether a change holds is judged after, on each dataset's held-out folds."""
    return lambda setting: float(
        np.mean([d.scores(setting)[masks[d.name]].mean() for d in datasets])
    )


def cross_validate(
    datasets: Sequence[Dataset], grid: dict[str, tuple[Any, ...]] = GRID
) -> dict[str, Any]:
    """Hold out each joint fold in turn: choose on the rest of every dataset, score each
    dataset's held-out fold with that choice.

    Per dataset the answer has each fold's held-out figures (and the shipped constants'),
    the pooled held-out (cross-validated) figures, and the figures of the choice made on
    all the data, in sample; and the choices themselves."""
    labels = {d.name: np.array(d.folds) for d in datasets}
    held_out = {d.name: np.zeros((len(d.folds), len(d.metrics))) for d in datasets}
    per_dataset: dict[str, dict[str, Any]] = {d.name: {"folds": []} for d in datasets}
    folds = []
    for fold in joint_folds(datasets):
        tests = {name: labels[name] == label for name, label in fold.items()}
        chosen = coordinate_ascent(
            objective(datasets, {name: ~test for name, test in tests.items()}), grid=grid
        )
        folds.append({"heldOut": fold, "chosen": dataclasses.asdict(chosen)})
        for d in datasets:
            test = tests[d.name]
            held_out[d.name][test] = d.scores(chosen)[test]
            per_dataset[d.name]["folds"].append(
                {
                    "heldOut": fold[d.name],
                    "questions": int(test.sum()),
                    "heldOutFigures": figures(d, d.scores(chosen)[test]),
                    "shippedFigures": figures(d, d.scores(SHIPPED)[test]),
                }
            )
    everything = {d.name: np.ones(len(d.folds), dtype=bool) for d in datasets}
    chosen = coordinate_ascent(objective(datasets, everything), grid=grid)
    changed = [name for name in grid if getattr(chosen, name) != getattr(SHIPPED, name)]
    for d in datasets:
        per_dataset[d.name] |= {
            "crossValidated": figures(d, held_out[d.name]),
            "allData": figures(d, d.scores(chosen)),
            # What each change from the shipped constants is worth: the choice with it undone.
            "eachChangeUndone": {
                name: figures(
                    d, d.scores(dataclasses.replace(chosen, **{name: getattr(SHIPPED, name)}))
                )
                for name in changed
            },
            "shipped": figures(d, d.scores(SHIPPED)),
        }
    return {
        "folds": folds,
        "allData": dataclasses.asdict(chosen),
        "shipped": dataclasses.asdict(SHIPPED),
        "datasets": per_dataset,
    }


def figures(dataset: Dataset, matrix: np.ndarray) -> dict[str, float]:
    """Each metric's mean over the matrix's questions, as the dataset prints it."""
    means = matrix.mean(axis=0) if len(matrix) else np.zeros(len(dataset.metrics))
    if dataset.percent:
        return {m: round(100 * float(v), 1) for m, v in zip(dataset.metrics, means, strict=True)}
    return {m: round(float(v), 3) for m, v in zip(dataset.metrics, means, strict=True)}


class Evaluator:
    """Every question's candidates, read once per k1; score matrices per setting."""

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

    def scores(self, setting: Setting) -> np.ndarray:
        """(questions x metrics): each question's figures under ``setting``."""
        if setting not in self._cache:
            for index, question in enumerate(self.questions):
                if setting.k1 not in question.lexical:
                    question.lexical[setting.k1] = self._read_lexical(index, setting.k1)
            self._cache[setting] = np.array(
                [list(q.score(ranked_refs(q, setting))) for q in self.questions], dtype=float
            )
        return self._cache[setting]


def collect(
    runtime_url: str,
    profile: str,
    embed: Callable[[str], list[float]],
    asked: Iterable[AskedQuestion],
) -> Evaluator:
    """Read each question's semantic candidates now and its lexical ones on demand.

    ``asked`` gives (fold, account id, question, scoring of a ranking of source refs: a
    ``Question``'s ``score``); ``embed`` the query
    vector (the service's own inference). Candidates are read through the service's
    functions, as the runtime role, one tenant transaction per read.
    """
    pool = open_pool(runtime_url, max_size=1)
    store = Store(pool=pool, cursor_secret=b"-" * 32, profile=profile, max_distance=2.0)
    largest = {"limit": max(int(n) for n in GRID["candidates"])}
    rows: list[tuple[Principal, str]] = []
    questions = []
    for fold, account_id, text, score in asked:
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
        questions.append(Question(fold, score, slim(semantic), slim(neighbours), {}))

    def read_lexical(index: int, k1: float) -> list[dict[str, Any]]:
        principal, words = rows[index]
        with transaction(pool, principal.account_id) as conn:
            return slim(recall.lexical_candidates(conn, principal, words, "true", largest, k1=k1))

    return Evaluator(questions, read_lexical, pool.close)


#: What ranking and scoring read of a candidate row; the rest (content, provenance, ...)
#: is dropped, or 997 questions' 800 candidates per k1 and their neighbours held
#: over 17 GB.
KEPT = (
    "id",
    "source_ref",
    "source_agent",
    "updated_at",
    "score",
    "terms",
    "distance",
    "neighbour_of",
)


def slim(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: row[key] for key in KEPT if key in row} for row in rows]


def table(report: dict[str, Any], datasets: Sequence[Dataset]) -> str:
    """Per dataset, its folds held out, pooled and all-data figures as a fixed-width
    table; then the choices."""
    lines = []
    for d in datasets:
        found = report["datasets"][d.name]
        cells = [f"{m:>{width(m)}}" for m in d.metrics]
        head = f"{d.name:<44}" + "".join(cells)
        lines += [head, "-" * len(head)]

        def line(label: str, values: dict[str, float], d: Dataset = d) -> str:
            number = "{:.1f}" if d.percent else "{:.3f}"
            return f"{label:<44}" + "".join(
                f"{number.format(values[m]):>{width(m)}}" for m in d.metrics
            )

        for fold in found["folds"]:
            name, count = fold["heldOut"], fold["questions"]
            lines.append(line(f"{name} held out ({count}), chosen without", fold["heldOutFigures"]))
            lines.append(line(f"{name} at the shipped constants", fold["shippedFigures"]))
        lines.append(
            line(f"cross-validated ({len(found['folds'])} folds)", found["crossValidated"])
        )
        lines.append(line("all data, chosen on all data", found["allData"]))
        for name, undone in found["eachChangeUndone"].items():
            lines.append(line(f"all data, chosen but {name} {report['shipped'][name]}", undone))
        lines += [line("all data, shipped constants", found["shipped"]), ""]
    for fold in report["folds"]:
        held = " and ".join(fold["heldOut"].values())
        lines.append(f"chosen without {held}: {describe(fold['chosen'])}")
    lines.append(f"chosen on all data: {describe(report['allData'])}")
    lines.append(f"shipped: {describe(report['shipped'])}")
    return "\n".join(lines)


def width(metric: str) -> int:
    """A column wide enough for the metric's name and a figure."""
    return max(8, len(metric) + 2)


def describe(setting: dict[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in setting.items())


LOCOMO_METRICS = tuple(f"R@{k}" for k in KS)
#: LongMemEval's figures the targets name: session recall_all@5 and @10, ndcg_any@5, and
#: turn recall_all@10.
LONGMEMEVAL_METRICS = ("session R_all@5", "session R_all@10", "session nDCG@5", "turn R_all@10")
FOLDS = 5  # LongMemEval's folds of questions, as many as LoCoMo's dev conversations
FOLD_SEED = 50


def locomo_asked(
    samples: list[dict[str, Any]], sessions: int | None, account_of: dict[str, str]
) -> list[AskedQuestion]:
    """LoCoMo's questions for ``collect``: each held out with its conversation, scored by
    recall@k of its evidence turns."""

    def score(gold: frozenset[str]) -> Callable[[list[str]], Sequence[float]]:
        return lambda refs: list(recall_at([dia_id(r) for r in refs], gold).values())

    return [
        (sample["sample_id"], account_of[sample["sample_id"]], q.text, score(q.evidence))
        for sample in samples
        for q in questions_of(sample, (t.dia_id for t in turns_of(sample, sessions)))
    ]


def longmemeval_asked(
    questions: list[longmemeval.Question], account_of: dict[str, str], folds: int = FOLDS
) -> list[AskedQuestion]:
    """LongMemEval's questions for ``collect``, in ``folds`` folds (``folds_of``), each
    scored by the benchmark's metrics of ``LONGMEMEVAL_METRICS``."""

    def score(question: longmemeval.Question) -> Callable[[list[str]], Sequence[float]]:
        def figures(refs: list[str]) -> Sequence[float]:
            row = longmemeval.scores(question, longmemeval.turns_of(question, refs))
            session, turn = row["session"], row["turn"]
            return [
                session["recall_all@5"],
                session["recall_all@10"],
                session["ndcg_any@5"],
                turn["recall_all@10"],
            ]

        return figures

    labels = folds_of([q.kind for q in questions], folds)
    return [
        (label, account_of[q.qid], q.text, score(q))
        for label, q in zip(labels, questions, strict=True)
    ]


def folds_of(kinds: Sequence[str], folds: int, seed: int = FOLD_SEED) -> list[str]:
    """A fold label ("fold 1" ...) for each question of ``kinds`` (its question types):
    each type's questions shuffled with ``seed`` and dealt round the folds, one deal
    carrying on from where the previous type's stopped, so every type is spread across
    the folds and fold sizes differ by one at most."""
    labels = [""] * len(kinds)
    rng = random.Random(seed)  # noqa: S311 - a reproducible split, not a secret
    dealt = 0
    for kind in sorted(set(kinds)):
        members = [i for i, k in enumerate(kinds) if k == kind]
        rng.shuffle(members)
        for index in members:
            labels[index] = f"fold {dealt % folds + 1}"
            dealt += 1
    return labels


def verdict(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Whether a lever is kept: it must raise the mean cross-validated figure of every
    dataset (its held-out folds pooled), not just the objective; each metric's change."""
    changes = {}
    for name, found in before["datasets"].items():
        was, now = found["crossValidated"], after["datasets"][name]["crossValidated"]
        changes[name] = {m: round(now[m] - was[m], 3) for m in was}
    means = {name: sum(c.values()) / len(c) for name, c in changes.items()}
    return {"changes": changes, "kept": all(mean > 0 for mean in means.values())}


def locomo_over_http(summary: dict[str, dict[str, Any]]) -> dict[str, float]:
    """LoCoMo's hybrid figures over HTTP (``quality.summarize``) as ``figures`` has them."""
    return {f"R@{k}": round(summary["hybrid"]["all"][f"recall@{k}"], 1) for k in KS}


def longmemeval_over_http(summary: dict[str, Any]) -> dict[str, float]:
    """LongMemEval's hybrid figures over HTTP (``longmemeval.summarize``) as ``figures``
    has them."""
    session, turn = summary["hybrid"]["session"]["all"], summary["hybrid"]["turn"]["all"]
    values = (
        session["recall_all@5"],
        session["recall_all@10"],
        session["ndcg_any@5"],
        turn["recall_all@10"],
    )
    return {m: round(v, 3) for m, v in zip(LONGMEMEVAL_METRICS, values, strict=True)}


def strays(
    report: dict[str, Any], datasets: Sequence[Dataset], over_http: dict[str, dict[str, float]]
) -> list[str]:
    """The figures where in-process search at the shipped constants differs from the
    same search over HTTP (``over_http``, per dataset, as ``figures`` has them) by more
    than half a point: then the tuning would not be of the service."""
    found = []
    for d in datasets:
        shipped = report["datasets"][d.name]["shipped"]
        for metric, value in over_http[d.name].items():
            if abs(shipped[metric] - value) > (0.5 if d.percent else 0.005):
                found.append(f"{d.name} {metric}: {shipped[metric]} in process, {value} over HTTP")
    return found


@dataclass(frozen=True)
class Asked:
    """A dataset's questions, before their candidates are read."""

    name: str
    metrics: tuple[str, ...]
    questions: list[AskedQuestion]
    percent: bool = False


def tune(
    runtime_url: str,
    ask_address: str,
    asked: Sequence[Asked],
    over_http: dict[str, dict[str, float]],
    grid: dict[str, tuple[Any, ...]] = GRID,
    lever: dict[str, tuple[Any, ...]] | None = None,
) -> dict[str, Any]:
    """Cross-validate over the datasets' saved accounts, in process, and print the table.

    Query vectors come from grove-ask at ``ask_address``, as the service's own. Exits
    non-zero when search at the shipped constants strays from ``over_http`` (``strays``).
    With ``lever`` (constants whose first value is today's ranking) the cross-validation
    runs again with them added to the grid, and ``verdict`` says whether it is kept.
    """
    from grove_memory.inference import InferenceClient

    client = InferenceClient(ask_address, "minilm")
    started = time.perf_counter()
    evaluators: list[Evaluator] = []

    def embed(text: str) -> list[float]:
        return client.embed_query(text, 30)

    try:
        for each in asked:
            evaluators.append(collect(runtime_url, "minilm", embed, each.questions))
        datasets = [
            Dataset(a.name, a.metrics, [q.fold for q in e.questions], e.scores, a.percent)
            for a, e in zip(asked, evaluators, strict=True)
        ]
        report = cross_validate(datasets, grid)
        report["seconds"] = round(time.perf_counter() - started, 1)
        print(f"\ncross-validation ({report['seconds']} s)\n" + table(report, datasets))
        found = strays(report, datasets, over_http)
        if found:
            raise SystemExit(
                f"in-process search strays from HTTP ({'; '.join(found)}): not the service"
            )
        if lever:
            # Printed once the choice without it is: the lever's run takes as long again.
            tried = cross_validate(datasets, {**grid, **lever})
            report["lever"] = {"grid": lever, "report": tried, "verdict": verdict(report, tried)}
            print(f"\nwith {describe(lever)}\n" + table(tried, datasets))
            print(json.dumps(report["lever"]["verdict"], indent=2))
    finally:
        for evaluator in evaluators:
            evaluator.close()
        client.close()
    return report


def main() -> None:
    """Cross-validate on LoCoMo and LongMemEval together, ingesting or reusing a store."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--questions",
        type=int,
        help=f"LongMemEval: the first N questions shuffled with seed {longmemeval.SEED}"
        " (default: all)",
    )
    parser.add_argument("--locomo", type=Path, default=stack.DATA, help="LoCoMo's data file")
    parser.add_argument(
        "--longmemeval", type=Path, default=longmemeval.DATA, help="LongMemEval_S's data file"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--keep", type=Path, help="ingest into this new directory and keep the store there"
    )
    where.add_argument(
        "--reuse", type=Path, help="score the store kept in this directory (refused if stale)"
    )
    parser.add_argument(
        "--lever",
        action="store_true",
        help=f"cross-validate again with {', '.join(LEVER)} tried (bench/README.md)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    samples = stack.locomo(args.locomo)
    questions = longmemeval.chosen(longmemeval.load(args.longmemeval), args.questions)
    wanted = manifest(args.locomo, samples, args.longmemeval, questions)
    found = kept.accounts(args.reuse, wanted) if args.reuse else None
    directory = args.reuse or (kept.fresh(args.keep) if args.keep else None)
    with stack.stack("minilm", pgdata=kept.pgdata(directory) if directory else None) as running:
        locomo_accounts = quality.Accounts(running, "locomo")
        longmemeval_accounts = quality.Accounts(running, "longmemeval")
        if found is None:
            running.start_worker()
            locomo_keys = quality.save_samples(
                running.api_url, locomo_accounts.new_key, locomo_accounts.wait_ready, samples
            )
            longmemeval_keys, ingested = longmemeval.save_all(
                running.api_url,
                longmemeval_accounts.new_key,
                longmemeval_accounts.wait_ready,
                questions,
            )
            print(f"LongMemEval saved and embedded: {ingested}")
            if args.keep:
                kept.write(
                    args.keep,
                    with_accounts(
                        wanted, locomo_accounts.account_of, longmemeval_accounts.account_of
                    ),
                )
        else:
            locomo_keys = {n: locomo_accounts.key_of(n, a) for n, a in found["locomo"].items()}
            longmemeval_keys = {
                n: longmemeval_accounts.key_of(n, a) for n, a in found["longmemeval"].items()
            }
        locomo_summary = quality.score_samples(
            running.api_url, locomo_keys, samples, None, ("hybrid",)
        )
        print(quality.table(locomo_summary))
        longmemeval_report = longmemeval.evaluate(
            running.api_url, longmemeval_keys, questions, ("hybrid",)
        )
        print(longmemeval.table(longmemeval_report))
        report = tune(
            running.db.runtime_url,
            running.env["GROVE_ASK_ADDRESS"],
            [
                Asked(
                    "LoCoMo",
                    LOCOMO_METRICS,
                    locomo_asked(samples, None, locomo_accounts.account_of),
                    True,
                ),
                Asked(
                    "LongMemEval",
                    LONGMEMEVAL_METRICS,
                    longmemeval_asked(questions, longmemeval_accounts.account_of),
                ),
            ],
            {
                "LoCoMo": locomo_over_http(locomo_summary),
                "LongMemEval": longmemeval_over_http(longmemeval_report["summary"]),
            },
            lever=LEVER if args.lever else None,
        )
    quality.write(
        "crossval.json",
        {
            "seconds": quality.elapsed(started),
            "questions": [q.qid for q in questions],
            "locomo": locomo_summary,
            "longmemeval": longmemeval_report,
            "crossValidation": report,
        },
    )


def manifest(
    locomo_file: Path,
    samples: list[dict[str, Any]],
    longmemeval_file: Path,
    questions: list[longmemeval.Question],
) -> dict[str, Any]:
    """What a store of these samples and questions holds, as ``bench.kept`` checks it."""
    return {
        "profile": "minilm",
        "locomo": {
            "file": kept.file_digest(locomo_file),
            "notes": {
                s["sample_id"]: kept.notes_digest(
                    (t.content, f"{t.dia_id} {t.date}") for t in turns_of(s)
                )
                for s in samples
            },
        },
        "longmemeval": {
            "file": kept.file_digest(longmemeval_file),
            "notes": {
                q.qid: kept.notes_digest((n.content, f"{n.ref} {n.source}") for n in q.notes)
                for q in questions
            },
        },
    }


def with_accounts(
    wanted: dict[str, Any], locomo_accounts: dict[str, str], longmemeval_accounts: dict[str, str]
) -> dict[str, Any]:
    """The manifest with each dataset's accounts by sample or question ID."""
    return {
        **wanted,
        "locomo": {**wanted["locomo"], "accounts": locomo_accounts},
        "longmemeval": {**wanted["longmemeval"], "accounts": longmemeval_accounts},
    }


if __name__ == "__main__":
    main()

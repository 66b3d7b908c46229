"""MiniLM in bfloat16 gives the float32 model's vectors to within cosine 0.9998; a lone
text is embedded on its own thread count (``GROVE_EMBED_SINGLE_TEXT_THREADS``)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from grove_ask.providers import MiniLM, native_bfloat16

#: Of different lengths, so one batch pads some of them.
TEXTS = [
    "deploys go out on Tuesdays after the change review",
    "Caroline: I went to an LGBTQ support group yesterday and it was so powerful.",
    "the staging database password rotates every 30 days; ask ops for the new one",
    "ok",
    "Melanie: We painted a sunrise together at the lake [shared a photo: a painting of a sunrise]",
]


@pytest.fixture(scope="module")
def float32() -> MiniLM:
    return MiniLM("float32")


def test_bfloat16_vectors_are_unit_length_and_within_cosine_0_9998_of_float32(
    float32: MiniLM,
) -> None:
    half = MiniLM("bfloat16")
    assert half.precision == "bfloat16"
    exact = np.array(float32.embed(TEXTS))
    batched = np.array(half.embed(TEXTS))
    alone = np.array([half.embed([text])[0] for text in TEXTS])
    for vectors in (batched, alone):
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        cosines = (vectors * exact).sum(axis=1)
        assert cosines.min() >= 0.9998, cosines
    # The same nearest text for each query as float32 gives.
    queries = np.array(half.embed(["when do deploys happen?", "who painted the sunrise?"]))
    exact_queries = np.array(float32.embed(["when do deploys happen?", "who painted the sunrise?"]))
    assert (
        list((queries @ batched.T).argmax(axis=1))
        == list((exact_queries @ exact.T).argmax(axis=1))
        == [0, 4]
    )


def test_auto_precision_is_bfloat16_exactly_when_the_cpu_has_it_natively(float32: MiniLM) -> None:
    assert float32.precision == "float32"
    assert MiniLM("auto").precision == ("bfloat16" if native_bfloat16() else "float32")


def test_a_lone_text_runs_on_its_own_threads_and_batches_on_all(float32: MiniLM) -> None:
    import torch

    torch.set_num_threads(2)
    one = MiniLM("float32", single_text_threads=1)
    assert one.single_text_threads == 1
    alone = one.embed([TEXTS[1]])
    assert torch.get_num_threads() == 1
    batched = one.embed(TEXTS)
    assert torch.get_num_threads() == 2
    # The thread count changes the speed, not the vector.
    assert np.allclose(alone[0], batched[1], atol=1e-5)
    assert np.allclose(alone[0], float32.embed([TEXTS[1]])[0], atol=1e-5)
    assert MiniLM("float32").single_text_threads == 2  # 0: the batches' threads


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_a_lone_text_through_the_traced_graph_is_the_pipelines_own_vector(
    float32: MiniLM, precision: str
) -> None:
    """The traced graph fixes that every token is attended to; it must still give the
    pipeline's vector at every length, up to and past the 256-token truncation."""
    model = float32 if precision == "float32" else MiniLM("bfloat16")
    words = " ".join(TEXTS).split()
    for n in (1, 2, 3, 5, 9, 17, 33, 65, 129, 257, 400):
        text = " ".join(words[i % len(words)] for i in range(n))
        alone = np.array(model.embed([text])[0])
        pipeline = model._model.encode([text], normalize_embeddings=True)[0]
        assert float(alone @ pipeline) >= 0.99999, (precision, n)
        assert abs(float(np.linalg.norm(alone)) - 1.0) < 1e-5


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_length_shaped_batches_give_each_text_its_own_vector_in_order(
    float32: MiniLM, precision: str
) -> None:
    """A batch of texts from a word to past the model's window, long and short mixed:
    every model batch pads to at most the token budget, and each text gets, in its place,
    the vector it gets alone (float32's within cosine 0.9998 in bfloat16)."""
    model = float32 if precision == "float32" else MiniLM("bfloat16")
    words = " ".join(TEXTS).split()
    texts = [
        " ".join(words[(i * 7 + j) % len(words)] for j in range(n))
        for i, n in enumerate((300, 3, 40, 1, 120, 9, 260, 17, 2, 60, 33, 200))
    ]
    padded: list[tuple[int, int]] = []
    # The model batches, as they reach the embeddings (a text alone takes the traced graph).
    transformer: Any = model._model[0]
    hook = transformer.auto_model.embeddings.register_forward_pre_hook(
        lambda module, args, kwargs: padded.append(tuple(kwargs["input_ids"].shape)),
        with_kwargs=True,
    )
    try:
        batched = np.array(model.embed(texts))
    finally:
        hook.remove()
    assert padded and max(rows for rows, _ in padded) > 1
    assert all(rows * tokens <= model.batch_tokens for rows, tokens in padded), padded
    alone = np.array([float32.embed([text])[0] for text in texts])
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    cosines = (batched * alone).sum(axis=1)
    assert cosines.min() >= (0.99999 if precision == "float32" else 0.9998), cosines
    assert list((batched @ alone.T).argmax(axis=1)) == list(range(len(texts)))


@pytest.mark.parametrize("chosen", [None, "ACTIVE"])
def test_torchs_threads_sleep_between_parallel_regions_unless_the_operator_chose(
    chosen: str | None,
) -> None:
    """OpenMP reads its wait policy once, when torch loads: a fresh process loads the
    model, and torch with it, with OMP_WAIT_POLICY passive unless it was set already."""
    env = {name: value for name, value in os.environ.items() if name != "OMP_WAIT_POLICY"}
    if chosen:
        env["OMP_WAIT_POLICY"] = chosen
    code = (
        "import os, sys\n"
        "from grove_ask.providers import MiniLM\n"
        "assert 'torch' not in sys.modules\n"
        "MiniLM('float32')\n"
        "print(os.environ['OMP_WAIT_POLICY'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == (chosen or "PASSIVE")

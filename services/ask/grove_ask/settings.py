"""The ask service's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 50051
DEFAULT_THREADS = 8
DEFAULT_MODEL_BATCH = 64
#: Padded tokens a MiniLM batch may hold: four texts at its 256-token window, or more,
#: shorter ones (``grove_ask.providers.shaped_batches``).
DEFAULT_BATCH_TOKENS = 1024
MAX_BATCH_TOKENS = 262_144  # the largest model batch (1,024 texts) at the full window
DEFAULT_COALESCE_MS = 0
DEFAULT_MAX_CONCURRENT_RPCS = 64
DEFAULT_METRICS_PORT = 9051
DEFAULT_ANSWER_OPENAI_TIMEOUT_SECONDS = 20.0


class AskSettings(BaseSettings):
    """Configuration of ``grove-ask``; a bad value stops the process at start-up."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    embedding_profile: Literal["minilm", "openai", "disabled"] = "minilm"
    ask_host: str = "127.0.0.1"
    ask_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_PORT
    ask_threads: Annotated[int, Field(ge=1, le=256)] = DEFAULT_THREADS
    #: Calls in progress or waiting for a thread; one more is refused at once with
    #: RESOURCE_EXHAUSTED instead of queueing without bound.
    ask_max_concurrent_rpcs: Annotated[int, Field(ge=1, le=10_000)] = DEFAULT_MAX_CONCURRENT_RPCS
    ask_metrics_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_METRICS_PORT
    metrics_host: str = "127.0.0.1"
    #: The MiniLM weights' number format. ``bfloat16`` halves the weights the CPU reads per
    #: call (1.5-2x faster; vectors within cosine 0.9998 of ``float32``'s, pooled and
    #: normalized in float32); ``auto`` picks it when the CPU computes bfloat16 natively
    #: (AVX-512 BF16 or AMX), where elsewhere it would be emulated and slower.
    embed_precision: Literal["auto", "float32", "bfloat16"] = "auto"
    embed_model_batch: Annotated[int, Field(ge=1, le=1024)] = DEFAULT_MODEL_BATCH
    #: MiniLM encodes a batch sorted by length, in batches that pad to at most this many
    #: tokens (a longer text alone): on LongMemEval's chat turns 1,024 embedded 1.4x as
    #: many texts per CPU second as one padded batch of 32 (bf16; fp32 1.6x), 2,048 about
    #: as many, 256 fewer (batches too small). 1: every text alone.
    embed_batch_tokens: Annotated[int, Field(ge=1, le=MAX_BATCH_TOKENS)] = DEFAULT_BATCH_TOKENS
    #: torch threads for a batch of one text (a lone query; larger batches use every
    #: thread torch has, ``OMP_NUM_THREADS``). A query is embedded while the api reads its
    #: lexical candidates, so it shares the CPU: with a core busy, two threads took p50
    #: 15.7 / p95 139 ms for what one thread does in 8.3 / 9.5 (idle: 6.0 against 8.0).
    #: 0: the same threads as batches.
    embed_single_text_threads: Annotated[int, Field(ge=0, le=256)] = 1
    #: How long the model thread waits for more requests before encoding. 0: none — it
    #: encodes what is queued at once, and requests arriving meanwhile form the next batch
    #: (a lone query pays the model's time only; a wait of 5 ms cost every query 5 ms).
    embed_coalesce_ms: Annotated[int, Field(ge=0, le=1000)] = DEFAULT_COALESCE_MS
    openai_base_url: str | None = None
    openai_model: str | None = None
    openai_api_key: SecretStr | None = None
    openai_dimensions: Annotated[int, Field(ge=1, le=16000)] | None = None
    openai_timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 10.0
    #: How ``Answer`` writes answers: ``extractive`` (cited evidence sentences), ``openai``
    #: (a chat-completions model, falling back to ``extractive``) or ``disabled``.
    answer_generator: Literal["extractive", "disabled", "openai"] = "extractive"
    #: The ``openai`` generator's endpoint (``…/v1``; ``/chat/completions`` is appended).
    answer_openai_base_url: str | None = None
    answer_openai_model: str | None = None
    answer_openai_api_key: SecretStr | None = None
    #: Connect and read timeout of one chat-completions request (504 after it).
    answer_openai_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = (
        DEFAULT_ANSWER_OPENAI_TIMEOUT_SECONDS
    )
    #: Ask for ``response_format: {"type": "json_object"}`` (off for servers that reject it).
    answer_openai_json_mode: bool = True

    @field_validator("answer_openai_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _openai_complete(self) -> AskSettings:
        if self.embedding_profile == "openai":
            missing = [
                f"GROVE_{name.upper()}"
                for name in ("openai_base_url", "openai_model", "openai_dimensions")
                if getattr(self, name) is None
            ]
            if missing:
                raise ValueError(f"the openai profile needs {', '.join(missing)}")
        if self.answer_generator == "openai":
            missing = [
                f"GROVE_{name.upper()}"
                for name in ("answer_openai_base_url", "answer_openai_model")
                if not getattr(self, name)
            ]
            if missing:
                raise ValueError(f"the openai answer generator needs {', '.join(missing)}")
        return self

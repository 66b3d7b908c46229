"""The ask service's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 50051
DEFAULT_THREADS = 8
DEFAULT_MODEL_BATCH = 64
DEFAULT_COALESCE_MS = 5
DEFAULT_MAX_CONCURRENT_RPCS = 64
DEFAULT_METRICS_PORT = 9051


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
    embed_model_batch: Annotated[int, Field(ge=1, le=1024)] = DEFAULT_MODEL_BATCH
    embed_coalesce_ms: Annotated[int, Field(ge=0, le=1000)] = DEFAULT_COALESCE_MS
    openai_base_url: str | None = None
    openai_model: str | None = None
    openai_api_key: SecretStr | None = None
    openai_dimensions: Annotated[int, Field(ge=1, le=16000)] | None = None
    openai_timeout_seconds: Annotated[float, Field(gt=0, le=300)] = 10.0
    #: How ``Answer`` writes answers: ``extractive`` (cited evidence sentences) or
    #: ``disabled`` (``Answer`` refuses). ``openai`` is named so it can be refused clearly.
    answer_generator: Literal["extractive", "disabled", "openai"] = "extractive"

    @field_validator("answer_generator")
    @classmethod
    def _generator_built(cls, value: str) -> str:
        if value == "openai":
            raise ValueError("the openai generator is not built yet; use extractive or disabled")
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
        return self

"""The worker's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from grove_db.quotas import QuotaSettings

DEFAULT_ASK_ADDRESS = "127.0.0.1:50051"
MIN_WEBHOOK_SECRET = 32


class WorkerSettings(QuotaSettings):
    """Configuration of ``grove-worker``; a bad value stops the process at start-up (the
    quotas: for the passages it stores)."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    database_url: Annotated[str, Field(min_length=1)]
    embedding_profile: Literal["minilm", "openai", "disabled"] = "minilm"
    ask_address: str = DEFAULT_ASK_ADDRESS
    worker_batch: Annotated[int, Field(ge=1, le=256)] = 32
    worker_lease_seconds: Annotated[float, Field(ge=1, le=3600)] = 120
    worker_max_attempts: Annotated[int, Field(ge=1, le=50)] = 5
    worker_backoff_seconds: Annotated[float, Field(ge=0, le=3600)] = 2.0
    worker_max_backoff_seconds: Annotated[float, Field(ge=0, le=86400)] = 300.0
    worker_poll_seconds: Annotated[float, Field(gt=0, le=300)] = 5.0
    worker_embed_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 60.0
    db_pool_size: Annotated[int, Field(ge=2, le=100)] = 4
    worker_metrics_port: Annotated[int, Field(ge=0, le=65535)] = 9090
    metrics_host: str = "127.0.0.1"
    worker_metrics_interval_seconds: Annotated[float, Field(gt=0, le=3600)] = 15.0
    #: On SIGTERM, how long to wait for an embedding in flight before giving its jobs back.
    worker_shutdown_grace_seconds: Annotated[float, Field(ge=0, le=600)] = 10.0
    #: Reading one uploaded file into passages: at most this long, in a process that may
    #: map at most this much memory (``grove_memory.files.sandbox``); past either it fails.
    #: Unset, the memory is derived from the container's limit (2048 without one); set,
    #: it must fit that limit or the worker does not start (``sandbox.memory_cap``).
    extract_timeout_seconds: Annotated[float, Field(gt=0, le=3600)] = 60.0
    extract_memory_mb: Annotated[int, Field(ge=128, le=65536)] | None = None
    #: Enrichment runs an account gets per UTC day (each note classified, each brief
    #: written); 0 turns enrichment off for every account.
    enrich_daily_quota: Annotated[int, Field(ge=0, le=10_000_000)] = 2000
    #: Who writes notebook briefs: ``extractive`` (quotes, in the worker) or ``answer``
    #: (grove-ask's ``Answer``, i.e. its GROVE_ANSWER_GENERATOR, e.g. an OpenAI-compatible
    #: model; extractive whenever it fails), within ``brief_timeout_seconds``.
    brief_generator: Literal["extractive", "answer"] = "extractive"
    brief_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 30.0
    #: Who classifies unfiled notes: ``lexical`` (their neighbours' vote, in the worker)
    #: or ``answer`` (grove-ask's ``Answer`` picks the notebook and kind, the lexical vote
    #: whenever it fails), within ``classify_timeout_seconds`` a note.
    classify_generator: Literal["lexical", "answer"] = "lexical"
    classify_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 30.0
    account_deletion_webhook: str | None = None
    #: Signs every webhook request (``Grove-Signature``); required with the webhook.
    account_deletion_webhook_secret: SecretStr | None = None

    @model_validator(mode="after")
    def _signed(self) -> WorkerSettings:
        secret = self.account_deletion_webhook_secret
        if self.account_deletion_webhook and (
            secret is None or len(secret.get_secret_value()) < MIN_WEBHOOK_SECRET
        ):
            raise ValueError(
                "GROVE_ACCOUNT_DELETION_WEBHOOK needs GROVE_ACCOUNT_DELETION_WEBHOOK_SECRET"
                f" (at least {MIN_WEBHOOK_SECRET} characters) to sign its requests"
            )
        return self

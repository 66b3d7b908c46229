"""The API service's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from grove_auth.addresses import ProxySettings
from grove_auth.identity import IdentitySettings
from grove_db.quotas import QuotaSettings
from grove_db.slow_clients import ClientTimeoutSettings
from grove_memory.store import (
    DEFAULT_FILE_VERSION_RETENTION_DAYS,
    DEFAULT_LEXICAL_WEIGHT,
    DEFAULT_MAX_DISTANCE,
)

DEFAULT_PORT = 8080
DEFAULT_HOST = "127.0.0.1"
DEFAULT_WORKERS = 2
DEFAULT_THREADS = 8
DEFAULT_POOL_SIZE = 4
MAX_BODY_BYTES = 64 * 1024
#: ``POST /v1/memories/batch``: 100 notes of 6,000 ASCII characters, with room to spare.
MAX_BATCH_BODY_BYTES = 1024 * 1024
#: ``POST /v1/files``: the largest upload (one version of one file).
MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_REQUEST_TIMEOUT_SECONDS = 30
DEFAULT_ASK_ADDRESS = "127.0.0.1:50051"
DEFAULT_QUERY_EMBED_MS = 300
DEFAULT_ANSWER_TIMEOUT_MS = 10_000
DEFAULT_METRICS_PORT = 9080
DEFAULT_RATE_LIMIT_PER_MINUTE = 600
DEFAULT_FAILED_AUTH_LIMIT_PER_MINUTE = 120
DEFAULT_ASK_RATE_LIMIT_PER_MINUTE = 60
DEFAULT_ASK_MAX_CONCURRENT_PER_ACCOUNT = 4


class ApiSettings(IdentitySettings, QuotaSettings, ProxySettings, ClientTimeoutSettings):
    """Configuration of ``grove-api``; a bad value stops the process at start-up."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    database_url: Annotated[str, Field(min_length=1)]
    secret_key: Annotated[SecretStr, Field(min_length=32)]
    api_host: str = DEFAULT_HOST
    api_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_PORT
    api_workers: Annotated[int, Field(ge=1, le=64)] = DEFAULT_WORKERS
    api_threads: Annotated[int, Field(ge=1, le=64)] = DEFAULT_THREADS
    api_timeout_seconds: Annotated[int, Field(ge=1, le=600)] = DEFAULT_REQUEST_TIMEOUT_SECONDS
    #: At least two: exports may hold at most all but one (``exports_at_once``).
    db_pool_size: Annotated[int, Field(ge=2, le=100)] = DEFAULT_POOL_SIZE
    #: Every statement is cancelled after this long: the database part of a request\'s deadline.
    db_statement_timeout_ms: Annotated[int, Field(ge=10, le=600_000)] = 10_000
    #: A session whose transaction waits this long on its client is ended by PostgreSQL.
    db_idle_in_transaction_timeout_ms: Annotated[int, Field(ge=100, le=3_600_000)] = 60_000
    #: An export whose client takes longer than this to accept one piece is cut off.
    export_send_timeout_seconds: Annotated[float, Field(gt=0, le=600)] = 30
    #: An export still streaming after this long is cut off (its transaction ends).
    export_max_seconds: Annotated[int, Field(ge=1, le=86_400)] = 900
    #: Exports of one account streaming at once, per api process (0: no limit).
    export_max_concurrent_per_account: Annotated[int, Field(ge=0, le=100)] = 1
    #: Exports streaming at once in one api process, whatever their accounts; one more:
    #: 503 ``unavailable`` with ``Retry-After`` (unset: ``exports_at_once``).
    export_max_concurrent: Annotated[int, Field(ge=1, le=99)] | None = None
    api_metrics_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_METRICS_PORT
    metrics_host: str = DEFAULT_HOST
    #: Requests per minute per credential, across all replicas (0: no limit).
    api_rate_limit_per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = (
        DEFAULT_RATE_LIMIT_PER_MINUTE
    )
    #: Failed sign-ins per minute, per presented token and per client address
    #: (``GROVE_TRUSTED_PROXIES``); past it their failures get 429 (0: no limit).
    api_failed_auth_limit_per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = (
        DEFAULT_FAILED_AUTH_LIMIT_PER_MINUTE
    )
    #: Live connections (API keys and approved agents) an account may hold (0: no limit).
    max_connections_per_account: Annotated[int, Field(ge=0, le=100_000)] = 200
    #: Requests per minute per account, all its credentials together, api and mcp counted
    #: in one bucket across all replicas (0: no limit).
    account_rate_limit_per_minute: Annotated[int, Field(ge=0, le=10_000_000)] = 3000
    embedding_profile: Literal["minilm", "openai", "disabled"] = "minilm"
    automatic_capture: Literal["on", "paused"] = "on"
    ask_address: str = DEFAULT_ASK_ADDRESS
    query_embed_timeout_ms: Annotated[int, Field(ge=10, le=10_000)] = DEFAULT_QUERY_EMBED_MS
    #: The deadline of one ``Answer`` call to grove-ask (504 ``inference_timeout`` after).
    answer_timeout_ms: Annotated[int, Field(ge=100, le=120_000)] = DEFAULT_ANSWER_TIMEOUT_MS
    #: ``POST /v1/ask`` requests per account per minute, across all replicas (0: no limit).
    ask_rate_limit_per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = (
        DEFAULT_ASK_RATE_LIMIT_PER_MINUTE
    )
    #: ``POST /v1/ask`` requests of one account in progress at once, per api process
    #: (0: no limit); one more is refused at once with 429.
    ask_max_concurrent_per_account: Annotated[int, Field(ge=0, le=10_000)] = (
        DEFAULT_ASK_MAX_CONCURRENT_PER_ACCOUNT
    )
    lexical_weight: Annotated[float, Field(ge=0, le=1)] = DEFAULT_LEXICAL_WEIGHT
    semantic_max_distance: Annotated[float, Field(gt=0, le=2)] = DEFAULT_MAX_DISTANCE
    max_body_bytes: Annotated[int, Field(ge=1024, le=16 * 1024 * 1024)] = MAX_BODY_BYTES
    #: The body limit of ``POST /v1/memories/batch`` alone (every other route: the above).
    max_batch_body_bytes: Annotated[int, Field(ge=1024, le=64 * 1024 * 1024)] = MAX_BATCH_BODY_BYTES
    #: The largest file ``POST /v1/files`` accepts, in bytes (exactly this passes; more: 413).
    max_file_bytes: Annotated[int, Field(ge=1, le=1024 * 1024 * 1024)] = MAX_FILE_BYTES
    #: Days a replaced file version keeps its bytes before the worker purges them (0: at
    #: the next sweep); they count against ``GROVE_QUOTA_FILE_BYTES`` until then.
    file_version_retention_days: Annotated[int, Field(ge=0, le=36_500)] = (
        DEFAULT_FILE_VERSION_RETENTION_DAYS
    )
    #: The platform switch of project memory (``/v1/orgs/.../memory``); off: 404 everywhere.
    project_memory_enabled: bool = True
    dev_issuer_key: str = ".grove/dev-issuer.pem"
    #: The MCP resource: agent tokens' audience and the resource metadata's ``resource``.
    mcp_public_url: str = "http://127.0.0.1:8081/mcp"
    #: Where grove-share is reached from outside: share links are ``<this>/public/shares/…``.
    share_public_url: str = "http://127.0.0.1:8082"
    openai_apps_challenge: str | None = Field(
        default=None, validation_alias="OPENAI_APPS_CHALLENGE", max_length=512
    )

    @field_validator("openai_apps_challenge")
    @classmethod
    def _one_token(cls, value: str | None) -> str | None:
        if value is not None and (not value or any(c.isspace() for c in value)):
            raise ValueError("must be one token without whitespace")
        return value

    @property
    def exports_at_once(self) -> int:
        """The exports one process streams at once: ``export_max_concurrent``, or half
        the pool (rounded down). Each holds a pooled connection while its client reads,
        for up to ``export_max_seconds``, so they never hold the whole pool: the other
        requests, ``/readyz`` among them, always have a connection."""
        return self.export_max_concurrent or self.db_pool_size // 2

    @model_validator(mode="after")
    def _exports_leave_connections(self) -> ApiSettings:
        if self.export_max_concurrent is not None and self.export_max_concurrent >= (
            self.db_pool_size
        ):
            raise ValueError(
                "GROVE_EXPORT_MAX_CONCURRENT must be below GROVE_DB_POOL_SIZE: each export"
                " holds a pooled connection, and other requests need at least one"
            )
        return self

    @model_validator(mode="after")
    def _owner_audience(self) -> ApiSettings:
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError(
                "GROVE_OIDC_AUDIENCE (owner access tokens' aud) is required with GROVE_OIDC_ISSUER"
            )
        return self

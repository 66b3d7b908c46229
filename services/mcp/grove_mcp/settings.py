"""The MCP service's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from grove_auth.addresses import ProxySettings
from grove_auth.identity import IdentitySettings
from grove_db.quotas import QuotaSettings
from grove_db.slow_clients import ClientTimeoutSettings
from grove_memory.store import DEFAULT_LEXICAL_WEIGHT, DEFAULT_MAX_DISTANCE

DEFAULT_PORT = 8081
DEFAULT_METRICS_PORT = 9081
DEFAULT_PER_CREDENTIAL_CONCURRENCY = 8
MAX_BODY_BYTES = 64 * 1024


class McpSettings(IdentitySettings, QuotaSettings, ProxySettings, ClientTimeoutSettings):
    """Configuration of ``grove-mcp``; a bad value stops the process at start-up."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    database_url: Annotated[str, Field(min_length=1)]
    secret_key: Annotated[SecretStr, Field(min_length=32)]
    mcp_host: str = "127.0.0.1"
    mcp_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_PORT
    mcp_workers: Annotated[int, Field(ge=1, le=64)] = 2
    mcp_public_url: str | None = None
    mcp_issuer_url: str | None = None
    mcp_allowed_hosts: Annotated[list[str], NoDecode, Field(default_factory=list)]
    #: Extra ``Origin`` values (DNS-rebinding protection), and the only origins that get
    #: CORS headers on /mcp and its resource metadata (browser-based clients).
    mcp_allowed_origins: Annotated[list[str], NoDecode, Field(default_factory=list)]
    mcp_per_credential_concurrency: Annotated[int, Field(ge=1, le=1000)] = (
        DEFAULT_PER_CREDENTIAL_CONCURRENCY
    )
    max_body_bytes: Annotated[int, Field(ge=1024, le=16 * 1024 * 1024)] = MAX_BODY_BYTES
    #: The platform switch of project memory: off, the project_memory_* tools disappear.
    project_memory_enabled: bool = True
    db_pool_size: Annotated[int, Field(ge=1, le=100)] = 4
    #: Every statement is cancelled after this long: the database part of a request\'s deadline.
    db_statement_timeout_ms: Annotated[int, Field(ge=10, le=600_000)] = 10_000
    mcp_metrics_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_METRICS_PORT
    metrics_host: str = "127.0.0.1"
    #: Requests per minute per credential, across all replicas (0: no limit).
    mcp_rate_limit_per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = 600
    #: Failed sign-ins to /mcp per minute, per presented token and per client address
    #: (``GROVE_TRUSTED_PROXIES``); past it their failures get 429 (0: no limit).
    mcp_failed_auth_limit_per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = 120
    #: Requests per minute per account, all its credentials together, api and mcp counted
    #: in one bucket across all replicas (0: no limit).
    account_rate_limit_per_minute: Annotated[int, Field(ge=0, le=10_000_000)] = 3000
    embedding_profile: Literal["minilm", "openai", "disabled"] = "minilm"
    automatic_capture: Literal["on", "paused"] = "on"
    ask_address: str = "127.0.0.1:50051"
    query_embed_timeout_ms: Annotated[int, Field(ge=10, le=10_000)] = 300
    lexical_weight: Annotated[float, Field(ge=0, le=1)] = DEFAULT_LEXICAL_WEIGHT
    semantic_max_distance: Annotated[float, Field(gt=0, le=2)] = DEFAULT_MAX_DISTANCE

    @field_validator("mcp_allowed_hosts", "mcp_allowed_origins", mode="before")
    @classmethod
    def _comma_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    def public_url(self, port: int) -> str:
        """The URL clients use for /mcp (the OAuth resource identifier)."""
        return self.mcp_public_url or f"http://{self.mcp_host}:{port}/mcp"

"""grove-share's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_PORT = 8082
DEFAULT_METRICS_PORT = 9082


class ShareSettings(BaseSettings):
    """Configuration of ``grove-share``; a bad value stops the process at start-up."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    #: grove-share's own database role: it may only call the public share functions.
    share_database_url: Annotated[str, Field(min_length=1)]
    secret_key: Annotated[SecretStr, Field(min_length=32)]
    share_host: str = "127.0.0.1"
    share_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_PORT
    share_workers: Annotated[int, Field(ge=1, le=64)] = 2
    share_threads: Annotated[int, Field(ge=1, le=64)] = 4
    #: A request still running after this long is abandoned (gunicorn restarts the worker).
    share_timeout_seconds: Annotated[int, Field(ge=1, le=600)] = 15
    share_db_pool_size: Annotated[int, Field(ge=1, le=100)] = 4
    share_db_statement_timeout_ms: Annotated[int, Field(ge=10, le=600_000)] = 2_000
    share_metrics_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_METRICS_PORT
    metrics_host: str = "127.0.0.1"
    #: Requests per minute from one client address, and to one real link from one address
    #: (0: no limit).
    share_rate_limit_per_ip_per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = 120
    share_rate_limit_per_link_per_minute: Annotated[int, Field(ge=0, le=1_000_000)] = 60
    #: Proxies in front that append to X-Forwarded-For (0: the peer address is the client).
    share_forwarded_hops: Annotated[int, Field(ge=0, le=10)] = 0
    #: Origins (``https://host``) whose images a page may load; none by default.
    share_image_origins: Annotated[tuple[str, ...], NoDecode] = ()

    @field_validator("share_image_origins", mode="before")
    @classmethod
    def _origins(cls, value: object) -> object:
        if isinstance(value, str):
            value = tuple(part.strip().rstrip("/") for part in value.split(",") if part.strip())
        for origin in value if isinstance(value, tuple | list) else ():
            parts = urlsplit(origin)
            if parts.scheme not in ("https", "http") or not parts.netloc or parts.path:
                raise ValueError(f"{origin!r} is not an origin like https://images.example.com")
        return value

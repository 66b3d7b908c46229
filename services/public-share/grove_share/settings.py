"""grove-share's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from grove_auth.keys import share_token_secret
from grove_db.slow_clients import ClientTimeoutSettings

DEFAULT_PORT = 8082
DEFAULT_METRICS_PORT = 9082


class ShareSettings(ClientTimeoutSettings):
    """Configuration of ``grove-share``; a bad value stops the process at start-up."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    #: grove-share's own database role: it may only call the public share functions.
    share_database_url: Annotated[str, Field(min_length=1)]
    #: The key share links are hashed with: ``grove secrets share-token`` prints it from
    #: GROVE_SECRET_KEY. In development GROVE_SECRET_KEY itself may be given instead.
    share_token_secret: SecretStr | None = None
    secret_key: Annotated[SecretStr, Field(min_length=32)] | None = None
    env: Literal["development", "production"] = "development"
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

    @model_validator(mode="after")
    def _one_secret(self) -> ShareSettings:
        if self.env == "production" and self.secret_key is not None:
            raise ValueError(
                "grove-share must not hold GROVE_SECRET_KEY in production: give it"
                " GROVE_SHARE_TOKEN_SECRET instead (grove secrets share-token prints it)"
            )
        if self.share_token_secret is None and self.secret_key is None:
            raise ValueError("GROVE_SHARE_TOKEN_SECRET is required (grove secrets share-token)")
        given = self.share_token_secret
        if given is not None:
            value = given.get_secret_value()
            if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
                raise ValueError(
                    "GROVE_SHARE_TOKEN_SECRET must be the 64 hex digits"
                    " grove secrets share-token prints"
                )
            if self.secret_key and value != share_token_secret(self.secret_key.get_secret_value()):
                raise ValueError("GROVE_SHARE_TOKEN_SECRET does not match GROVE_SECRET_KEY")
        return self

    def token_secret(self) -> str:
        """The share-link key, hex (given, or derived from GROVE_SECRET_KEY)."""
        if self.share_token_secret is not None:
            return self.share_token_secret.get_secret_value()
        assert self.secret_key is not None
        return share_token_secret(self.secret_key.get_secret_value())

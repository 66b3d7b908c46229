"""grove-console's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from grove_db.slow_clients import ClientTimeoutSettings

DEFAULT_PORT = 8083
DEFAULT_METRICS_PORT = 9083
#: grove-api on this host: the development default of ``GROVE_CONSOLE_API_URL``.
DEFAULT_API_URL = "http://127.0.0.1:8080"


class ConsoleSettings(ClientTimeoutSettings):
    """Configuration of ``grove-console``; a bad value stops the process at start-up."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    env: Literal["development", "production"] = "development"
    #: grove-console's own database role: it may only call the session functions.
    console_database_url: Annotated[str, Field(min_length=1)]
    #: The website's own secret: its sessions' tokens are sealed, and its sign-in cookie
    #: signed, with keys derived from it. Nothing else shares it, so a compromised website
    #: cannot forge API keys, cursors or share links.
    console_secret_key: Annotated[SecretStr, Field(min_length=32)] | None = None
    #: The server secret: refused in production; outside it, it may stand in for the above.
    secret_key: Annotated[SecretStr, Field(min_length=32)] | None = None
    #: Where grove-console reaches grove-api (server to server). Required in production,
    #: where the development default (the API on this host) is never right.
    console_api_url: str | None = None
    #: The URL agents connect to (grove-mcp's own setting): the Get started page shows it.
    mcp_public_url: str | None = None
    #: grove-api's public base URL, for the Get started page's REST examples (in
    #: development ``GROVE_CONSOLE_API_URL`` stands in for it).
    api_public_url: str | None = None
    #: The website's own public origin: its cookies, redirect URI and CSRF origin check.
    website_origin: Annotated[str, Field(min_length=1)]
    oidc_issuer: str | None = None
    #: The resource (audience) the website asks the provider for: the API's.
    oidc_audience: str | None = None
    console_client_id: str | None = None
    console_client_secret: SecretStr | None = None
    console_scopes: str = "openid"
    #: A session ends at the latest this long after sign-in (sooner when its token ends).
    console_session_hours: Annotated[int, Field(ge=1, le=720)] = 12
    dev_auth: bool = False
    dev_issuer_key: str = ".grove/dev-issuer.pem"
    console_host: str = "127.0.0.1"
    console_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_PORT
    console_workers: Annotated[int, Field(ge=1, le=64)] = 2
    console_threads: Annotated[int, Field(ge=1, le=64)] = 8
    console_timeout_seconds: Annotated[int, Field(ge=1, le=600)] = 30
    console_db_pool_size: Annotated[int, Field(ge=1, le=100)] = 4
    console_metrics_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_METRICS_PORT
    metrics_host: str = "127.0.0.1"
    #: Form bodies larger than this are refused (413).
    console_max_body_bytes: Annotated[int, Field(ge=1024, le=1024 * 1024)] = 64 * 1024
    #: Uploads are relayed to grove-api as they arrive, at most this many bytes (larger
    #: ones are refused here); the API's own ``GROVE_MAX_FILE_BYTES`` decides below it.
    console_max_upload_bytes: Annotated[int, Field(ge=1024, le=1024 * 1024 * 1024)] = (
        16 * 1024 * 1024
    )

    @model_validator(mode="after")
    def _consistent(self) -> ConsoleSettings:
        origin = urlsplit(self.website_origin)
        if origin.scheme not in ("http", "https") or not origin.netloc or origin.path:
            raise ValueError("GROVE_WEBSITE_ORIGIN must be an origin like https://memory.example")
        if self.env == "production" and self.secret_key is not None:
            raise ValueError(
                "grove-console must not hold GROVE_SECRET_KEY in production: give it"
                " GROVE_CONSOLE_SECRET_KEY, a random secret of its own"
            )
        if self.console_secret_key is None and self.secret_key is None:
            raise ValueError(
                "GROVE_CONSOLE_SECRET_KEY is required (a random secret of at least 32 characters)"
            )
        if self.env == "production":
            if self.dev_auth:
                raise ValueError("GROVE_DEV_AUTH must not be enabled when GROVE_ENV=production")
            if origin.scheme != "https":
                raise ValueError("GROVE_WEBSITE_ORIGIN must be https in production")
            if not self.console_api_url:
                raise ValueError(
                    "GROVE_CONSOLE_API_URL is required in production: where grove-console"
                    " reaches grove-api, e.g. http://api:8080"
                )
        if not self.dev_auth:
            needed = {
                "GROVE_OIDC_ISSUER": self.oidc_issuer,
                "GROVE_OIDC_AUDIENCE": self.oidc_audience,
                "GROVE_CONSOLE_CLIENT_ID": self.console_client_id,
                "GROVE_CONSOLE_CLIENT_SECRET": self.console_client_secret,
            }
            missing = [name for name, value in needed.items() if not value]
            if missing:
                raise ValueError(f"sign-in needs {', '.join(missing)} (or GROVE_DEV_AUTH=1)")
        return self

    def session_secret(self) -> str:
        """The secret the website's keys derive from (its own, or in development the
        server secret)."""
        secret = self.console_secret_key or self.secret_key
        assert secret is not None  # the validator requires one
        return secret.get_secret_value()

    @property
    def secure_cookies(self) -> bool:
        """Cookies are ``Secure`` whenever the website is served over https."""
        return self.website_origin.startswith("https://")

    @property
    def api_url(self) -> str:
        """Where grove-api answers this website (the development default when unset)."""
        return self.console_api_url or DEFAULT_API_URL

    @property
    def public_api_url(self) -> str | None:
        """The API's address as agents and scripts reach it, if known."""
        if self.api_public_url:
            return self.api_public_url.rstrip("/")
        return self.api_url.rstrip("/") if self.env == "development" else None

    @property
    def redirect_uri(self) -> str:
        return self.website_origin.rstrip("/") + "/auth/callback"

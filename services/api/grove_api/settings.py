"""The API service's settings, read once from ``GROVE_*`` environment variables."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_PORT = 8080
DEFAULT_HOST = "127.0.0.1"
DEFAULT_WORKERS = 2
DEFAULT_THREADS = 4
DEFAULT_POOL_SIZE = 4
MAX_BODY_BYTES = 64 * 1024
DEFAULT_REQUEST_TIMEOUT_SECONDS = 30


class ApiSettings(BaseSettings):
    """Configuration of ``grove-api``; a bad value stops the process at start-up."""

    model_config = SettingsConfigDict(env_prefix="GROVE_", frozen=True, extra="ignore")

    database_url: Annotated[str, Field(min_length=1)]
    secret_key: Annotated[SecretStr, Field(min_length=32)]
    api_host: str = DEFAULT_HOST
    api_port: Annotated[int, Field(ge=0, le=65535)] = DEFAULT_PORT
    api_workers: Annotated[int, Field(ge=1, le=64)] = DEFAULT_WORKERS
    api_threads: Annotated[int, Field(ge=1, le=64)] = DEFAULT_THREADS
    api_timeout_seconds: Annotated[int, Field(ge=1, le=600)] = DEFAULT_REQUEST_TIMEOUT_SECONDS
    db_pool_size: Annotated[int, Field(ge=1, le=100)] = DEFAULT_POOL_SIZE
    embedding_profile: Literal["minilm", "openai", "disabled"] = "disabled"
    max_body_bytes: Annotated[int, Field(ge=1024, le=16 * 1024 * 1024)] = MAX_BODY_BYTES

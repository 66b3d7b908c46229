"""grove-console's settings: what production requires of the website."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from grove_console.settings import ConsoleSettings
from grove_contracts.errors import settings_problems

PRODUCTION = {
    "env": "production",
    "console_database_url": "postgresql://grove_console@db/grove",
    "console_secret_key": "s" * 32,
    "website_origin": "https://memory.example",
    "oidc_issuer": "https://id.example",
    "oidc_audience": "https://memory.example/api",
    "console_client_id": "grove-console",
    "console_client_secret": "secret",
}


def test_production_needs_the_api_url_and_names_it() -> None:
    # The development default (the API on this host) is never right in a deployment.
    with pytest.raises(ValidationError) as refused:
        ConsoleSettings(**PRODUCTION)  # type: ignore[arg-type]
    assert settings_problems(refused.value) == (
        "GROVE_CONSOLE_API_URL is required in production: where grove-console reaches"
        " grove-api, e.g. http://api:8080"
    )
    settings = ConsoleSettings(**PRODUCTION, console_api_url="http://api:8080")  # type: ignore[arg-type]
    assert settings.api_url == "http://api:8080"
    assert settings.public_api_url is None  # only what the deployer says is shown


def test_development_falls_back_to_the_local_api() -> None:
    settings = ConsoleSettings(
        console_database_url="postgresql://x@db/grove",
        console_secret_key=SecretStr("s" * 32),
        website_origin="http://127.0.0.1:8083",
        dev_auth=True,
    )
    assert settings.api_url == settings.public_api_url == "http://127.0.0.1:8080"


def test_production_refuses_an_http_website_origin() -> None:
    with pytest.raises(ValidationError) as refused:
        ConsoleSettings(
            **{**PRODUCTION, "website_origin": "http://memory.example"},  # type: ignore[arg-type]
            console_api_url="http://api:8080",
        )
    assert settings_problems(refused.value) == "GROVE_WEBSITE_ORIGIN must be https in production"

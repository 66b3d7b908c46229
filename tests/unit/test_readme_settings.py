"""The configuration table (docs/configuration.md) names every setting every service reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_settings import BaseSettings

from grove_api.settings import ApiSettings
from grove_ask.settings import AskSettings
from grove_console.settings import ConsoleSettings
from grove_mcp.settings import McpSettings
from grove_share.settings import ShareSettings
from grove_worker.settings import WorkerSettings

CONFIGURATION = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()


@pytest.mark.parametrize(
    "settings",
    [ApiSettings, McpSettings, AskSettings, WorkerSettings, ShareSettings, ConsoleSettings],
)
def test_every_setting_is_documented(settings: type[BaseSettings]) -> None:
    prefix = settings.model_config.get("env_prefix", "")
    names = [
        str(field.validation_alias or f"{prefix}{name}").upper()
        for name, field in settings.model_fields.items()
    ]
    missing = [name for name in names if f"`{name}`" not in CONFIGURATION]
    assert not missing, f"{settings.__name__}: not in docs/configuration.md: {missing}"

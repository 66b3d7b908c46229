"""Grants decide which scopes a principal sees."""

from __future__ import annotations

import uuid

from grove_auth.principal import Principal


def test_scopes_follow_the_grants() -> None:
    chosen, other = uuid.uuid4(), uuid.uuid4()
    personal_only = Principal(uuid.uuid4(), uuid.uuid4(), personal=True, all_notebooks=False)
    assert personal_only.may_see_notebook(None)
    assert not personal_only.may_see_notebook(chosen)
    selected = Principal(
        uuid.uuid4(),
        uuid.uuid4(),
        personal=False,
        all_notebooks=False,
        notebook_ids=frozenset({chosen}),
    )
    assert selected.may_see_notebook(chosen)
    assert not selected.may_see_notebook(other)
    assert not selected.may_see_notebook(None)
    everything = Principal(uuid.uuid4(), uuid.uuid4(), personal=True, all_notebooks=True)
    assert everything.may_see_notebook(other)

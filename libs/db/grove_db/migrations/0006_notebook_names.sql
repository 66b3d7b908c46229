-- Notebook names are unique among live siblings, ignoring case.
CREATE UNIQUE INDEX projects_sibling_name ON projects (
    account_id, coalesce(parent_id, '00000000-0000-0000-0000-000000000000'::uuid), lower(name)
) WHERE deleted_at IS NULL;

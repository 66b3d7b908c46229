-- A note's neighbours: the notes saved just before and after it in the same scope (its
-- notebook, or personal) by the same named source (provenance.sourceAgent: an agent's
-- session, a conversation), in save order. Search and recall read them for their
-- semantic candidates (grove_memory.recall.NEIGHBOURS): a turn such as "Take a look at
-- this." is found through the message it answers. Notes that name no source have no
-- neighbours, and are not in this index. The scope is an expression, so that personal
-- notes are one sequence per source.
CREATE INDEX memories_sequence ON memories (
    account_id,
    (coalesce(project_id, '00000000-0000-0000-0000-000000000000'::uuid)),
    source_agent,
    created_at,
    id
) WHERE source_agent IS NOT NULL;

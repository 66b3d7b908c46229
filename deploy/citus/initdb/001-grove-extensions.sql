-- Every node of Grove's Citus cluster, on its first start: the extensions in Grove's
-- database (POSTGRES_DB). Citus first: it must be the first extension created.
CREATE EXTENSION IF NOT EXISTS citus;
CREATE EXTENSION IF NOT EXISTS vector;

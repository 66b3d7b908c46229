#!/bin/sh
# Registers the coordinator and every worker with Citus, on the coordinator as its
# superuser (PGHOST, PGUSER, PGPASSWORD, PGDATABASE from the Job). Idempotent: run it
# again (delete and re-apply the Job) after changing the workers' replicas, then
# rebalance (docs/scaling.md).
set -eu
# The superuser's password for the connections between nodes: the coordinator's to the
# workers, and the workers' to each other when shards move.
psql -v ON_ERROR_STOP=1 -v password="password=$PGPASSWORD" <<'SQL'
INSERT INTO pg_dist_authinfo (nodeid, rolename, authinfo)
VALUES (0, current_user, :'password')
ON CONFLICT (nodeid, rolename) DO UPDATE SET authinfo = excluded.authinfo;
SELECT citus_set_coordinator_host('citus-coordinator-0.citus-coordinator', 5432);
SQL
i=0
while [ "$i" -lt "$CITUS_WORKERS" ]; do
    # Returns the node's id, and the same id if it is registered already.
    psql -v ON_ERROR_STOP=1 -c "SELECT citus_add_node('citus-worker-$i.citus-worker', 5432)"
    i=$((i + 1))
done

-- `grove import` restores an export into an account and keeps each ID only when no
-- other account holds it (else it maps the ID to one of its own). To know that, the
-- schema owner (the migration role behind the `grove` command, the role running this
-- migration) may see which IDs exist in every account, but only inside a transaction
-- that asks for it with `grove.id_probe = 'on'`. The policies apply to that role alone
-- (`TO CURRENT_USER`): the services' roles never have them OR'ed into their row filter,
-- so their plans keep `account_id = …` as a plain condition an index can use.
CREATE POLICY owner_probes ON projects FOR SELECT TO CURRENT_USER
    USING (current_setting('grove.id_probe', true) = 'on');

CREATE POLICY owner_probes ON memories FOR SELECT TO CURRENT_USER
    USING (current_setting('grove.id_probe', true) = 'on');

CREATE POLICY owner_probes ON conversations FOR SELECT TO CURRENT_USER
    USING (current_setting('grove.id_probe', true) = 'on');

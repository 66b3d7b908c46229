-- Org reads gated on membership. Until now entering an org (the transaction-local
-- grove.org_id / grove.project_id, which any session of the runtime role can set) was
-- enough to read the org's name, projects, members and project-key hashes. Now:
--   orgs:            read by the org's members
--   org_members:     a person's own rows; the org's rows by its members
--   org_projects:    the entered org's projects, by its members
--   project_members: a person's own rows; the entered org's rows by its members
--   project_keys:    the entered project's keys by its admins only (and one key by its
--                    hash, which authentication needs)
-- and a project admin adds people to the org only as members (never owners).
--
-- Membership is read by grove_org_role(), now SECURITY DEFINER: a policy on org_members
-- cannot ask org_members about the caller without recursing into itself, so the function
-- reads it as the table owner. For that org_members does not FORCE row-level security: its
-- policies bind the runtime role (which owns nothing), not the migration role that owns the
-- table and these functions. The founding owner row, which no policy can allow without
-- reading an org nobody belongs to yet, is written by grove_found_org().

ALTER TABLE org_members NO FORCE ROW LEVEL SECURITY;

CREATE OR REPLACE FUNCTION grove_org_role(org uuid) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        SELECT role FROM org_members
        WHERE org_id = org AND account_id = grove_current_account()
    $$;
REVOKE EXECUTE ON FUNCTION grove_org_role(uuid) FROM PUBLIC;

-- A new org with the calling account as its owner (the one way to create an org).
CREATE FUNCTION grove_found_org(p_org uuid, p_name text) RETURNS void
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
        INSERT INTO orgs (id, name, created_by) VALUES (p_org, p_name, grove_current_account());
        INSERT INTO org_members (org_id, account_id, role)
            VALUES (p_org, grove_current_account(), 'owner');
    $$;
REVOKE EXECUTE ON FUNCTION grove_found_org(uuid, text) FROM PUBLIC;

DROP POLICY member_reads ON orgs;
CREATE POLICY member_reads ON orgs FOR SELECT USING (grove_org_role(id) IS NOT NULL);

DROP POLICY member_reads ON org_members;
CREATE POLICY member_reads ON org_members FOR SELECT
    USING (account_id = grove_current_account() OR grove_org_role(org_id) IS NOT NULL);
DROP POLICY manager_inserts ON org_members;
CREATE POLICY manager_inserts ON org_members FOR INSERT
    WITH CHECK (org_id = grove_current_org() AND (
        grove_org_role(org_id) = 'owner'
        OR (role = 'member' AND (SELECT grove_project_role()) = 'admin')));

DROP POLICY entered_reads ON org_projects;
CREATE POLICY member_reads ON org_projects FOR SELECT
    USING (org_id = grove_current_org() AND grove_org_role(org_id) IS NOT NULL);

DROP POLICY member_reads ON project_members;
CREATE POLICY member_reads ON project_members FOR SELECT
    USING (account_id = grove_current_account()
           OR (org_id = grove_current_org() AND grove_org_role(org_id) IS NOT NULL));

DROP POLICY entered ON project_keys;
CREATE POLICY admin_manages ON project_keys
    USING (org_id = grove_current_org() AND project_id = grove_current_project()
           AND (SELECT grove_project_role()) = 'admin');
CREATE POLICY key_lookup ON project_keys FOR SELECT USING (key_hash = grove_key_lookup());

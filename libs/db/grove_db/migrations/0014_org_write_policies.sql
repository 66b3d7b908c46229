-- Changes to orgs, projects and memberships need the right role in PostgreSQL too, not
-- only in the code: reads keep 0013's policies; writes get one policy per command (a
-- policy for ALL commands would also apply to the role functions' own reads of these
-- tables, and recurse).
--   orgs:            created by anyone for themselves; changed by the org's owners
--   org_projects:    created by the org's owners; locked (FOR UPDATE) by its admins too
--   org_members:     the creator's own owner row; others added by org owners or by an
--                    admin of the entered project
--   project_members: changed by an admin of the entered project, or by an org owner
--                    (who makes themselves a new project's first admin)

DROP POLICY member ON orgs;
CREATE POLICY member_reads ON orgs FOR SELECT
    USING (grove_org_role(id) IS NOT NULL OR id = grove_current_org());
CREATE POLICY creator_inserts ON orgs FOR INSERT
    WITH CHECK (created_by = grove_current_account());
CREATE POLICY owner_updates ON orgs FOR UPDATE
    USING (grove_org_role(id) = 'owner') WITH CHECK (grove_org_role(id) = 'owner');

DROP POLICY entered ON org_projects;
CREATE POLICY entered_reads ON org_projects FOR SELECT USING (org_id = grove_current_org());
CREATE POLICY owner_inserts ON org_projects FOR INSERT
    WITH CHECK (org_id = grove_current_org() AND grove_org_role(org_id) = 'owner');
CREATE POLICY manager_updates ON org_projects FOR UPDATE
    USING (org_id = grove_current_org()
           AND (grove_org_role(org_id) = 'owner'
                OR (id = grove_current_project() AND (SELECT grove_project_role()) = 'admin')));

DROP POLICY member ON org_members;
CREATE POLICY member_reads ON org_members FOR SELECT
    USING (account_id = grove_current_account() OR org_id = grove_current_org());
CREATE POLICY manager_inserts ON org_members FOR INSERT
    WITH CHECK (org_id = grove_current_org() AND (
        grove_org_role(org_id) = 'owner'
        OR (SELECT grove_project_role()) = 'admin'
        OR (role = 'owner' AND account_id = grove_current_account()
            AND EXISTS (SELECT 1 FROM orgs o
                        WHERE o.id = org_id AND o.created_by = grove_current_account()))));

DROP POLICY member ON project_members;
CREATE POLICY member_reads ON project_members FOR SELECT
    USING (account_id = grove_current_account() OR org_id = grove_current_org());
CREATE POLICY admin_inserts ON project_members FOR INSERT
    WITH CHECK (org_id = grove_current_org() AND project_id = grove_current_project()
                AND ((SELECT grove_project_role()) = 'admin'
                     OR grove_org_role(org_id) = 'owner'));
CREATE POLICY admin_updates ON project_members FOR UPDATE
    USING (org_id = grove_current_org() AND project_id = grove_current_project()
           AND (SELECT grove_project_role()) = 'admin');
CREATE POLICY admin_deletes ON project_members FOR DELETE
    USING (org_id = grove_current_org() AND project_id = grove_current_project()
           AND (SELECT grove_project_role()) = 'admin');

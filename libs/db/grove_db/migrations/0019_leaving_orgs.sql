-- Leaving orgs: deleting an account removes its own memberships (a person may always
-- delete their own membership rows; grove_auth.accounts does it on deletion), so a
-- deleted account neither counts as a project's admin nor keeps its project keys alive;
-- and an org's owners may manage the members of its projects (say, one whose last admin
-- left), as well as admins.
CREATE POLICY self_leaves ON project_members FOR DELETE
    USING (account_id = grove_current_account());
CREATE POLICY self_leaves ON org_members FOR DELETE
    USING (account_id = grove_current_account());

DROP POLICY admin_updates ON project_members;
CREATE POLICY manager_updates ON project_members FOR UPDATE
    USING (org_id = grove_current_org() AND project_id = grove_current_project()
           AND ((SELECT grove_project_role()) = 'admin' OR grove_org_role(org_id) = 'owner'));
DROP POLICY admin_deletes ON project_members;
CREATE POLICY manager_deletes ON project_members FOR DELETE
    USING (org_id = grove_current_org() AND project_id = grove_current_project()
           AND ((SELECT grove_project_role()) = 'admin' OR grove_org_role(org_id) = 'owner'));

-- Provisioning on first sign-in (GROVE_OIDC_PROVISIONING=personal): an identity of the
-- configured provider that owns no account gets a new personal account of its own.
--
-- A SECURITY DEFINER function, so the runtime role keeps accounts and owners read-only:
-- it may only create an account for the exact (issuer, subject) it has just verified.
-- A tombstoned identity (its account was deleted) gets nothing (NULL). Concurrent first
-- sign-ins of one identity serialize on an advisory lock and all get the same account.
-- EXECUTE is revoked from PUBLIC and granted to the runtime role (grants.sql).
CREATE FUNCTION grove_provision_owner(p_issuer text, p_subject text, p_name text)
    RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = public, pg_temp
    AS $$
DECLARE
    v_account uuid;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_issuer || '#' || p_subject, 15));
    IF EXISTS (SELECT 1 FROM identity_tombstones
               WHERE issuer = p_issuer AND subject = p_subject) THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('grove.owner_issuer', p_issuer, true);
    PERFORM set_config('grove.owner_subject', p_subject, true);
    SELECT account_id INTO v_account FROM account_owners
        WHERE issuer = p_issuer AND subject = p_subject;
    IF NOT FOUND THEN
        v_account := gen_random_uuid();
        PERFORM set_config('grove.account_id', v_account::text, true);
        INSERT INTO accounts (id, name) VALUES (v_account, p_name);
        INSERT INTO account_owners (account_id, issuer, subject)
            VALUES (v_account, p_issuer, p_subject);
    END IF;
    RETURN v_account;
END $$;
REVOKE EXECUTE ON FUNCTION grove_provision_owner(text, text, text) FROM PUBLIC;

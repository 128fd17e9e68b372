// Versions 2 and later of the PostgreSQL schema (schema.ts applies them in order), each the change
// of one release. Released versions are never edited; a change is a new version.

/**
 * v2: batch commits become idempotent. A batch whose answer was lost on the way (the connection
 * dropped after the commit) is sent again under the same id and applied once; ids are kept a day.
 */
export const V2_BATCH_IDS = `
CREATE TABLE committed_batches (id text PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX committed_batches_age ON committed_batches (committed_at);
DROP FUNCTION tollgate_commit(text, json, json);
-- One billing batch of one owner, once per batch id: charges summed per key and account; a charge first consumes
-- the owner's lease of the holder's current epoch (as on LMDB); then the usage rows, numbered in
-- their order. p_charges: [{k, ke, a, ae, q}], p_rows: [[0, time, account_id, key_id, …], …].
CREATE FUNCTION tollgate_commit(p_owner text, p_batch text, p_charges json, p_rows json) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  total record;
  holder_epoch integer;
  same bigint;
  returned bigint;
BEGIN
  INSERT INTO committed_batches (id) VALUES (p_batch) ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN RETURN false; END IF;   -- applied before: its answer was lost
  FOR total IN SELECT c.k AS id, sum(c.q) AS quota, array_agg(c.ke) AS epochs, array_agg(c.q) AS amounts
      FROM json_to_recordset(p_charges) AS c(k bigint, ke integer, a bigint, ae integer, q bigint) GROUP BY c.k ORDER BY c.k LOOP
    SELECT epoch INTO holder_epoch FROM keys WHERE id = total.id FOR UPDATE;
    CONTINUE WHEN NOT FOUND;
    SELECT sum(u.q) INTO same FROM unnest(total.epochs, total.amounts) AS u(e, q) WHERE u.e = holder_epoch;
    returned := CASE WHEN same IS NULL THEN 0 ELSE tollgate_release('k', total.id, p_owner, same) END;
    UPDATE keys SET used_quota = used_quota + total.quota,
      remain_quota = CASE WHEN unlimited_quota THEN remain_quota ELSE GREATEST(0, remain_quota - total.quota) END,
      leased = CASE WHEN unlimited_quota THEN GREATEST(0, leased - returned)
        ELSE LEAST(GREATEST(0, leased - returned), GREATEST(0, remain_quota - total.quota)) END
      WHERE id = total.id;
  END LOOP;
  FOR total IN SELECT c.a AS id, sum(c.q) AS quota, array_agg(c.ae) AS epochs, array_agg(c.q) AS amounts
      FROM json_to_recordset(p_charges) AS c(k bigint, ke integer, a bigint, ae integer, q bigint) GROUP BY c.a ORDER BY c.a LOOP
    SELECT epoch INTO holder_epoch FROM accounts WHERE id = total.id FOR UPDATE;
    CONTINUE WHEN NOT FOUND;
    SELECT sum(u.q) INTO same FROM unnest(total.epochs, total.amounts) AS u(e, q) WHERE u.e = holder_epoch;
    returned := CASE WHEN same IS NULL THEN 0 ELSE tollgate_release('a', total.id, p_owner, same) END;
    UPDATE accounts SET used_quota = used_quota + total.quota, balance = GREATEST(0, balance - total.quota),
      leased = LEAST(GREATEST(0, leased - returned), GREATEST(0, balance - total.quota))
      WHERE id = total.id;
  END LOOP;
  PERFORM tollgate_insert_rows(p_rows);
  RETURN true;
END $$;
`;

/** Issue 18: operator (admin API) tokens, stored as digests, and the append-only audit log. */
export const V3_OPERATIONS = `
CREATE TABLE admin_tokens (
  digest text PRIMARY KEY,
  label text NOT NULL,
  created_time bigint NOT NULL
);

CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  time bigint NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  account_id bigint,
  details jsonb NOT NULL
);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_account ON audit_log (account_id, id);
-- append-only: an entry is never changed or removed
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
`;

/**
 * v4: a lease grant whose answer was lost. Each acquisition carries an id, recorded with what it
 * granted; a worker that did not get the answer (the connection dropped after the commit) undoes
 * it by that id once the database answers again, so the slice it never learnt of is not held for
 * the worker's whole life under heartbeats it keeps sending. An undo that arrives first leaves a
 * tombstone, and an acquisition that finds one is rolled back. Ids are kept a day.
 */
export const V4_GRANT_IDS = `
CREATE TABLE lease_grants (
  id text PRIMARY KEY,
  owner text NOT NULL,
  key_id bigint,
  key_epoch integer,
  key_amount bigint NOT NULL DEFAULT 0,
  account_id bigint,
  account_epoch integer,
  account_amount bigint NOT NULL DEFAULT 0,
  undone boolean NOT NULL DEFAULT false,
  granted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lease_grants_age ON lease_grants (granted_at);

-- tollgate_acquire under a grant id: what it granted is recorded under that id (in the same
-- transaction), unless the id was undone already, in which case nothing is granted at all.
CREATE FUNCTION tollgate_acquire_once(p_grant text, p_owner text, p_node text, p_ttl_ms integer,
  p_key bigint, p_key_need bigint, p_key_extra bigint, p_key_share double precision,
  p_account bigint, p_account_need bigint, p_account_extra bigint, p_account_share double precision) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  result json;
BEGIN
  result := tollgate_acquire(p_owner, p_node, p_ttl_ms, p_key, p_key_need, p_key_extra, p_key_share, p_account, p_account_need, p_account_extra, p_account_share);
  IF result->>'shortfall' IS NOT NULL THEN RETURN result; END IF;
  INSERT INTO lease_grants (id, owner, key_id, key_epoch, key_amount, account_id, account_epoch, account_amount)
  VALUES (p_grant, p_owner, p_key, (result->'key'->>'epoch')::integer, COALESCE((result->'key'->>'amount')::bigint, 0),
    p_account, (result->'account'->>'epoch')::integer, (result->'account'->>'amount')::bigint)
  ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN RAISE EXCEPTION 'lease grant % was undone before it arrived', p_grant; END IF;
  RETURN result;
END $$;

-- Gives back what grant p_grant took (its answer never reached the worker), once; a grant of an
-- older epoch of its holder is not touched (the new epoch dropped those leases). True when
-- something was given back.
CREATE FUNCTION tollgate_undo_grant(p_grant text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  grant_row lease_grants%ROWTYPE;
  holder_epoch integer;
  returned bigint;
BEGIN
  INSERT INTO lease_grants (id, owner, undone) VALUES (p_grant, '', true) ON CONFLICT (id) DO NOTHING;
  IF FOUND THEN RETURN false; END IF;   -- never granted, and now it never will be
  SELECT * INTO grant_row FROM lease_grants WHERE id = p_grant FOR UPDATE;
  IF grant_row.undone THEN RETURN false; END IF;
  IF grant_row.key_id IS NOT NULL AND grant_row.key_amount > 0 THEN
    SELECT epoch INTO holder_epoch FROM keys WHERE id = grant_row.key_id FOR UPDATE;
    IF FOUND AND holder_epoch = grant_row.key_epoch THEN
      returned := tollgate_release('k', grant_row.key_id, grant_row.owner, grant_row.key_amount);
      UPDATE keys SET leased = GREATEST(0, leased - returned) WHERE id = grant_row.key_id;
    END IF;
  END IF;
  IF grant_row.account_amount > 0 THEN
    SELECT epoch INTO holder_epoch FROM accounts WHERE id = grant_row.account_id FOR UPDATE;
    IF FOUND AND holder_epoch = grant_row.account_epoch THEN
      returned := tollgate_release('a', grant_row.account_id, grant_row.owner, grant_row.account_amount);
      UPDATE accounts SET leased = GREATEST(0, leased - returned) WHERE id = grant_row.account_id;
    END IF;
  END IF;
  UPDATE lease_grants SET undone = true WHERE id = p_grant;
  RETURN true;
END $$;
`;

/**
 * v5: a give-back whose answer was lost. It carries an id and is applied once (the id joins the
 * batch ids), so the worker can send it again until it gets an answer: the slice it gave back in
 * its own books is given back in the database too, never twice.
 */
export const V5_GIVE_BACK_IDS = `
CREATE FUNCTION tollgate_give_back_once(p_op text, p_owner text, p_kind char, p_holder bigint, p_epoch integer, p_amount bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO committed_batches (id) VALUES (p_op) ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN RETURN false; END IF;   -- applied before: its answer was lost
  PERFORM tollgate_give_back(p_owner, p_kind, p_holder, p_epoch, p_amount);
  RETURN true;
END $$;
`;

/**
 * v6: one lock order for every transaction that touches leases, so no two of them deadlock. The
 * order is key rows by id, each followed by its lease rows, then account rows by id, each followed
 * by its lease rows. tollgate_commit, tollgate_release, tollgate_reap and tollgate_undo_grant keep
 * it already; the heartbeat (RENEW_LEASES_SQL) locks the rows it renews in that order.
 * tollgate_acquire no longer renews every lease of its owner (that UPDATE locked lease rows of other
 * holders while holding the account row, and a batch commit holding one of those rows and waiting
 * for the account deadlocked with it); the heartbeat renews them. It also locks its own lease row
 * of the key before the account row.
 */
export const V6_LOCK_ORDER = `
CREATE OR REPLACE FUNCTION tollgate_acquire(p_owner text, p_node text, p_ttl_ms integer,
  p_key bigint, p_key_need bigint, p_key_extra bigint, p_key_share double precision,
  p_account bigint, p_account_need bigint, p_account_extra bigint, p_account_share double precision) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  key_unlimited boolean := true;
  key_epoch integer;
  key_granted bigint := 0;
  account_epoch integer;
  account_granted bigint;
  free bigint;
  held bigint;
  mine bigint;
BEGIN
  IF p_key IS NOT NULL THEN
    SELECT unlimited_quota, epoch, remain_quota - leased, leased INTO key_unlimited, key_epoch, free, held FROM keys WHERE id = p_key FOR UPDATE;
    IF NOT FOUND THEN RETURN json_build_object('shortfall', 'gone', 'available', 0, 'heldByOthers', 0); END IF;
    IF NOT key_unlimited THEN
      PERFORM 1 FROM leases WHERE kind = 'k' AND holder_id = p_key AND owner = p_owner FOR UPDATE;
      IF free < p_key_need THEN
        SELECT COALESCE(sum(amount), 0) INTO mine FROM leases WHERE kind = 'k' AND holder_id = p_key AND owner = p_owner;
        RETURN json_build_object('shortfall', 'key', 'available', GREATEST(0, free), 'heldByOthers', GREATEST(0, held - mine));
      END IF;
      key_granted := tollgate_grant(free, p_key_need, p_key_extra, p_key_share);
    END IF;
  END IF;
  SELECT epoch, balance - leased, leased INTO account_epoch, free, held FROM accounts WHERE id = p_account FOR UPDATE;
  IF NOT FOUND THEN RETURN json_build_object('shortfall', 'gone', 'available', 0, 'heldByOthers', 0); END IF;
  PERFORM 1 FROM leases WHERE kind = 'a' AND holder_id = p_account AND owner = p_owner FOR UPDATE;
  IF free < p_account_need THEN
    SELECT COALESCE(sum(amount), 0) INTO mine FROM leases WHERE kind = 'a' AND holder_id = p_account AND owner = p_owner;
    RETURN json_build_object('shortfall', 'account', 'available', GREATEST(0, free), 'heldByOthers', GREATEST(0, held - mine));
  END IF;
  account_granted := tollgate_grant(free, p_account_need, p_account_extra, p_account_share);
  IF key_granted > 0 THEN
    UPDATE keys SET leased = leased + key_granted WHERE id = p_key AND remain_quota - leased >= key_granted;
    PERFORM tollgate_hold('k', p_key, p_owner, p_node, key_granted, p_ttl_ms);
  END IF;
  IF account_granted > 0 THEN
    UPDATE accounts SET leased = leased + account_granted WHERE id = p_account AND balance - leased >= account_granted;
    PERFORM tollgate_hold('a', p_account, p_owner, p_node, account_granted, p_ttl_ms);
  END IF;
  RETURN json_build_object(
    'key', CASE WHEN p_key IS NULL OR key_unlimited THEN NULL ELSE json_build_object('amount', key_granted, 'epoch', key_epoch) END,
    'account', json_build_object('amount', account_granted, 'epoch', account_epoch));
END $$;
`;

/**
 * v7: a charge taken under an older cap of its key (settled before the owner changed remain_quota
 * or unlimited_quota) is spending from before the change: it adds to used_quota, and the new
 * remain_quota stays what the owner set. Only charges of the key's current epoch, and those taken
 * from no lease (-1, a lapsed one), take from remain_quota. As on LMDB.
 */
export const V7_CAP_EPOCHS = `
CREATE OR REPLACE FUNCTION tollgate_commit(p_owner text, p_batch text, p_charges json, p_rows json) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  total record;
  holder_epoch integer;
  same bigint;
  under_cap bigint;
  returned bigint;
BEGIN
  INSERT INTO committed_batches (id) VALUES (p_batch) ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN RETURN false; END IF;   -- applied before: its answer was lost
  FOR total IN SELECT c.k AS id, sum(c.q) AS quota, array_agg(c.ke) AS epochs, array_agg(c.q) AS amounts
      FROM json_to_recordset(p_charges) AS c(k bigint, ke integer, a bigint, ae integer, q bigint) GROUP BY c.k ORDER BY c.k LOOP
    SELECT epoch INTO holder_epoch FROM keys WHERE id = total.id FOR UPDATE;
    CONTINUE WHEN NOT FOUND;
    SELECT sum(u.q) INTO same FROM unnest(total.epochs, total.amounts) AS u(e, q) WHERE u.e = holder_epoch;
    SELECT COALESCE(sum(u.q), 0) INTO under_cap FROM unnest(total.epochs, total.amounts) AS u(e, q) WHERE u.e = holder_epoch OR u.e = -1;
    returned := CASE WHEN same IS NULL THEN 0 ELSE tollgate_release('k', total.id, p_owner, same) END;
    UPDATE keys SET used_quota = used_quota + total.quota,
      remain_quota = CASE WHEN unlimited_quota THEN remain_quota ELSE GREATEST(0, remain_quota - under_cap) END,
      leased = CASE WHEN unlimited_quota THEN GREATEST(0, leased - returned)
        ELSE LEAST(GREATEST(0, leased - returned), GREATEST(0, remain_quota - under_cap)) END
      WHERE id = total.id;
  END LOOP;
  FOR total IN SELECT c.a AS id, sum(c.q) AS quota, array_agg(c.ae) AS epochs, array_agg(c.q) AS amounts
      FROM json_to_recordset(p_charges) AS c(k bigint, ke integer, a bigint, ae integer, q bigint) GROUP BY c.a ORDER BY c.a LOOP
    SELECT epoch INTO holder_epoch FROM accounts WHERE id = total.id FOR UPDATE;
    CONTINUE WHEN NOT FOUND;
    SELECT sum(u.q) INTO same FROM unnest(total.epochs, total.amounts) AS u(e, q) WHERE u.e = holder_epoch;
    returned := CASE WHEN same IS NULL THEN 0 ELSE tollgate_release('a', total.id, p_owner, same) END;
    UPDATE accounts SET used_quota = used_quota + total.quota, balance = GREATEST(0, balance - total.quota),
      leased = LEAST(GREATEST(0, leased - returned), GREATEST(0, balance - total.quota))
      WHERE id = total.id;
  END LOOP;
  PERFORM tollgate_insert_rows(p_rows);
  RETURN true;
END $$;
`;

/**
 * v8: a refund of a charge taken under an older cap of its key (p_key_epoch; the owner set
 * remain_quota since) leaves remain_quota as the owner set it, as the charge's commit did (v7).
 * NULL: the charge's cap is not known (a task of an older release), refunded as before.
 */
export const V8_REFUND_EPOCHS = `
CREATE FUNCTION tollgate_refund(p_account bigint, p_key bigint, p_quota bigint, p_row json, p_key_epoch integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE keys SET used_quota = GREATEST(0, used_quota - p_quota),
    remain_quota = CASE WHEN unlimited_quota OR (p_key_epoch IS NOT NULL AND p_key_epoch <> epoch) THEN remain_quota ELSE remain_quota + p_quota END
    WHERE id = p_key;
  UPDATE accounts SET used_quota = GREATEST(0, used_quota - p_quota), balance = balance + p_quota WHERE id = p_account;
  IF p_row IS NOT NULL THEN
    PERFORM tollgate_insert_rows(json_build_array(p_row));
  END IF;
END $$;
`;

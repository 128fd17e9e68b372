// Version 1 of the PostgreSQL schema (schema.ts applies it): the tables, the change notifications
// that keep every process's lookups fresh, and the lease and batch functions. Released: never
// edited; a change is a later version (schema-changes.ts).

const TABLES = `
CREATE TABLE tollgate_meta (name text PRIMARY KEY, value jsonb NOT NULL);

CREATE TABLE accounts (
  id bigserial PRIMARY KEY,
  name text NOT NULL UNIQUE,
  grp text NOT NULL,
  balance bigint NOT NULL CHECK (balance >= 0),
  used_quota bigint NOT NULL DEFAULT 0,
  created_time bigint NOT NULL,
  leased bigint NOT NULL DEFAULT 0 CHECK (leased >= 0),
  epoch integer NOT NULL DEFAULT 0
);

CREATE TABLE access_tokens (
  digest text PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  scope text NOT NULL CHECK (scope IN ('read', 'write')),
  created_time bigint NOT NULL
);
CREATE INDEX access_tokens_account ON access_tokens (account_id);

CREATE TABLE keys (
  id bigserial PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  digest text NOT NULL UNIQUE,
  sealed_iv bytea NOT NULL,
  sealed_tag bytea NOT NULL,
  sealed_data bytea NOT NULL,
  masked text NOT NULL,
  name text NOT NULL,
  remain_quota bigint NOT NULL CHECK (remain_quota >= 0),
  unlimited_quota boolean NOT NULL,
  expired_time bigint NOT NULL,
  grp text NOT NULL,
  billing_type smallint NOT NULL,
  models text NOT NULL,
  remark text NOT NULL,
  status smallint NOT NULL,
  used_quota bigint NOT NULL DEFAULT 0,
  created_time bigint NOT NULL,
  leased bigint NOT NULL DEFAULT 0 CHECK (leased >= 0),
  epoch integer NOT NULL DEFAULT 0
);
CREATE INDEX keys_account ON keys (account_id, id);

CREATE TABLE leases (
  kind char(1) NOT NULL CHECK (kind IN ('k', 'a')),
  holder_id bigint NOT NULL,
  owner text NOT NULL,
  node text NOT NULL,
  amount bigint NOT NULL CHECK (amount >= 0),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (kind, holder_id, owner)
);
CREATE INDEX leases_owner ON leases (owner);
CREATE INDEX leases_expiry ON leases (expires_at);

CREATE TABLE usage_records (
  id bigserial PRIMARY KEY,
  account_id bigint NOT NULL,
  time bigint NOT NULL,
  key_id bigint NOT NULL,
  key_name text NOT NULL,
  model text NOT NULL,
  channel text NOT NULL,
  endpoint text NOT NULL,
  prompt_tokens bigint NOT NULL,
  completion_tokens bigint NOT NULL,
  cache_read_tokens bigint NOT NULL,
  cache_creation_tokens bigint NOT NULL,
  quota bigint NOT NULL,
  latency_ms bigint NOT NULL,
  first_byte_ms bigint,
  status integer NOT NULL,
  end_reason text NOT NULL,
  usage_source text NOT NULL,
  stream boolean NOT NULL
);
CREATE INDEX usage_account ON usage_records (account_id, id);
CREATE INDEX usage_account_key ON usage_records (account_id, key_id, id);

CREATE TABLE video_tasks (
  task_id text PRIMARY KEY,
  processing boolean NOT NULL,
  task jsonb NOT NULL,
  seq bigserial
);
CREATE INDEX video_tasks_open ON video_tasks (seq) WHERE processing;
`;

/**
 * Changes of what the per-call lookups cache (a key's identity, status, allowlist, epoch; an
 * account's identity and epoch) are announced on the channel `tollgate_changes`, so every process of
 * every node drops its copy at once. Money columns change on every batch and are not cached.
 */
const NOTIFY = `
CREATE FUNCTION tollgate_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM pg_notify('tollgate_changes', 'n');
  ELSIF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('tollgate_changes', 'k' || OLD.id);
  ELSIF (OLD.status, OLD.expired_time, OLD.grp, OLD.models, OLD.billing_type, OLD.unlimited_quota, OLD.epoch, OLD.name, OLD.digest, OLD.account_id)
      IS DISTINCT FROM (NEW.status, NEW.expired_time, NEW.grp, NEW.models, NEW.billing_type, NEW.unlimited_quota, NEW.epoch, NEW.name, NEW.digest, NEW.account_id) THEN
    PERFORM pg_notify('tollgate_changes', 'k' || NEW.id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER keys_changed AFTER INSERT OR UPDATE OR DELETE ON keys FOR EACH ROW EXECUTE FUNCTION tollgate_key_changed();

CREATE FUNCTION tollgate_account_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM pg_notify('tollgate_changes', 'a' || OLD.id);
  ELSIF (OLD.name, OLD.grp, OLD.epoch) IS DISTINCT FROM (NEW.name, NEW.grp, NEW.epoch) THEN
    PERFORM pg_notify('tollgate_changes', 'a' || NEW.id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER accounts_changed AFTER UPDATE OR DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION tollgate_account_changed();
`;

/**
 * Leases. tollgate_acquire takes the key's slice and the account's slice in one call (one round
 * trip), each with one conditional UPDATE … WHERE remain - leased >= need RETURNING: all or nothing.
 * Taking a lease also renews every other lease of the same owner (it is a heartbeat too; until v6).
 */
const LEASES = `
CREATE FUNCTION tollgate_grant(free bigint, need bigint, extra bigint, share double precision) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT need + LEAST(extra, floor(GREATEST(0, free - need) * share)::bigint)
$$;

CREATE FUNCTION tollgate_hold(p_kind char, p_holder bigint, p_owner text, p_node text, p_amount bigint, p_ttl_ms integer) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO leases (kind, holder_id, owner, node, amount, expires_at)
  VALUES (p_kind, p_holder, p_owner, p_node, p_amount, now() + p_ttl_ms * interval '1 millisecond')
  ON CONFLICT (kind, holder_id, owner) DO UPDATE SET amount = leases.amount + EXCLUDED.amount, expires_at = EXCLUDED.expires_at, node = EXCLUDED.node
$$;

CREATE FUNCTION tollgate_acquire(p_owner text, p_node text, p_ttl_ms integer,
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
  -- rows locked in one order everywhere (key, then account) so two nodes never deadlock
  IF p_key IS NOT NULL THEN
    SELECT unlimited_quota, epoch, remain_quota - leased, leased INTO key_unlimited, key_epoch, free, held FROM keys WHERE id = p_key FOR UPDATE;
    IF NOT FOUND THEN RETURN json_build_object('shortfall', 'gone', 'available', 0, 'heldByOthers', 0); END IF;
    IF NOT key_unlimited THEN
      IF free < p_key_need THEN
        SELECT COALESCE(sum(amount), 0) INTO mine FROM leases WHERE kind = 'k' AND holder_id = p_key AND owner = p_owner;
        RETURN json_build_object('shortfall', 'key', 'available', GREATEST(0, free), 'heldByOthers', GREATEST(0, held - mine));
      END IF;
      key_granted := tollgate_grant(free, p_key_need, p_key_extra, p_key_share);
    END IF;
  END IF;
  SELECT epoch, balance - leased, leased INTO account_epoch, free, held FROM accounts WHERE id = p_account FOR UPDATE;
  IF NOT FOUND THEN RETURN json_build_object('shortfall', 'gone', 'available', 0, 'heldByOthers', 0); END IF;
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
  UPDATE leases SET expires_at = now() + p_ttl_ms * interval '1 millisecond' WHERE owner = p_owner;
  RETURN json_build_object(
    'key', CASE WHEN p_key IS NULL OR key_unlimited THEN NULL ELSE json_build_object('amount', key_granted, 'epoch', key_epoch) END,
    'account', json_build_object('amount', account_granted, 'epoch', account_epoch));
END $$;

-- Gives back up to p_amount of an owner's lease on one holder: the row shrinks (or goes), and so
-- does the holder's leased. Returns what was given back. The holder row must be locked already.
CREATE FUNCTION tollgate_release(p_kind char, p_holder bigint, p_owner text, p_amount bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  current bigint;
  returned bigint;
BEGIN
  SELECT amount INTO current FROM leases WHERE kind = p_kind AND holder_id = p_holder AND owner = p_owner FOR UPDATE;
  IF NOT FOUND THEN RETURN 0; END IF;
  returned := LEAST(current, GREATEST(0, p_amount));
  IF current - returned <= 0 THEN
    DELETE FROM leases WHERE kind = p_kind AND holder_id = p_holder AND owner = p_owner;
  ELSE
    UPDATE leases SET amount = current - returned WHERE kind = p_kind AND holder_id = p_holder AND owner = p_owner;
  END IF;
  RETURN returned;
END $$;

CREATE FUNCTION tollgate_give_back(p_owner text, p_kind char, p_holder bigint, p_epoch integer, p_amount bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  holder_epoch integer;
  returned bigint;
BEGIN
  IF p_kind = 'k' THEN
    SELECT epoch INTO holder_epoch FROM keys WHERE id = p_holder FOR UPDATE;
    IF NOT FOUND OR holder_epoch <> p_epoch THEN RETURN; END IF;
    returned := tollgate_release('k', p_holder, p_owner, p_amount);
    UPDATE keys SET leased = GREATEST(0, leased - returned) WHERE id = p_holder;
  ELSE
    SELECT epoch INTO holder_epoch FROM accounts WHERE id = p_holder FOR UPDATE;
    IF NOT FOUND OR holder_epoch <> p_epoch THEN RETURN; END IF;
    returned := tollgate_release('a', p_holder, p_owner, p_amount);
    UPDATE accounts SET leased = GREATEST(0, leased - returned) WHERE id = p_holder;
  END IF;
END $$;

-- Returns whole leases: of one owner (a worker that is gone), or every lease past its expiry (a
-- node that stopped renewing them). Holders are locked in id order, keys before accounts.
CREATE FUNCTION tollgate_reap(p_owner text) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  lease record;
  reaped integer := 0;
  reaped_amount bigint;
BEGIN
  FOR lease IN
    SELECT kind, holder_id, owner FROM leases
    WHERE (p_owner IS NOT NULL AND owner = p_owner) OR (p_owner IS NULL AND expires_at < now())
    ORDER BY kind DESC, holder_id, owner
  LOOP
    IF lease.kind = 'k' THEN
      PERFORM 1 FROM keys WHERE id = lease.holder_id FOR UPDATE;
    ELSE
      PERFORM 1 FROM accounts WHERE id = lease.holder_id FOR UPDATE;
    END IF;
    DELETE FROM leases WHERE kind = lease.kind AND holder_id = lease.holder_id AND owner = lease.owner
      AND ((p_owner IS NOT NULL) OR expires_at < now())
      RETURNING amount INTO reaped_amount;
    CONTINUE WHEN NOT FOUND;
    IF lease.kind = 'k' THEN
      UPDATE keys SET leased = GREATEST(0, leased - reaped_amount) WHERE id = lease.holder_id;
    ELSE
      UPDATE accounts SET leased = GREATEST(0, leased - reaped_amount) WHERE id = lease.holder_id;
    END IF;
    reaped := reaped + 1;
  END LOOP;
  RETURN reaped;
END $$;

-- Usage rows ([0, time, account_id, key_id, …] as a worker packs them), numbered in their order.
CREATE FUNCTION tollgate_insert_rows(p_rows json) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO usage_records (time, account_id, key_id, key_name, model, channel, endpoint, prompt_tokens, completion_tokens,
    cache_read_tokens, cache_creation_tokens, quota, latency_ms, first_byte_ms, status, end_reason, usage_source, stream)
  SELECT (r->>1)::bigint, (r->>2)::bigint, (r->>3)::bigint, r->>4, r->>5, r->>6, r->>7, (r->>8)::bigint, (r->>9)::bigint,
    (r->>10)::bigint, (r->>11)::bigint, (r->>12)::bigint, (r->>13)::bigint, (r->>14)::bigint, (r->>15)::integer, r->>16, r->>17, (r->>18)::boolean
  FROM json_array_elements(p_rows) WITH ORDINALITY AS rows (r, n) ORDER BY n
$$;

-- One billing batch of one owner: charges summed per key and account; a charge first consumes
-- the owner's lease of the holder's current epoch (as on LMDB); then the usage rows, numbered in
-- their order. p_charges: [{k, ke, a, ae, q}], p_rows: [[0, time, account_id, key_id, …], …].
CREATE FUNCTION tollgate_commit(p_owner text, p_charges json, p_rows json) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  total record;
  holder_epoch integer;
  same bigint;
  returned bigint;
BEGIN
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
END $$;

-- A refund of a committed charge (a failed video task): key (unless unlimited) and account get
-- the quota back, both used_quota shrink, and the record (negative quota) is appended.
CREATE FUNCTION tollgate_refund(p_account bigint, p_key bigint, p_quota bigint, p_row json) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE keys SET used_quota = GREATEST(0, used_quota - p_quota),
    remain_quota = CASE WHEN unlimited_quota THEN remain_quota ELSE remain_quota + p_quota END WHERE id = p_key;
  UPDATE accounts SET used_quota = GREATEST(0, used_quota - p_quota), balance = balance + p_quota WHERE id = p_account;
  IF p_row IS NOT NULL THEN
    PERFORM tollgate_insert_rows(json_build_array(p_row));
  END IF;
END $$;
`;

export const V1_SQL = TABLES + NOTIFY + LEASES;

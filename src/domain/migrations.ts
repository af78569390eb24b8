// Numbered schema migrations of the metadata store, applied in order at start-up.
// Append new entries; never edit one that has shipped (databases in the field ran it).
// Times are integer milliseconds since the epoch (UTC); views format them as ISO 8601.

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Rebuilds tables that others reference: run with foreign keys off (a DROP TABLE would
   * otherwise cascade into every child row), checked with foreign_key_check before commit.
   */
  rebuildsTables?: boolean;
  /**
   * A query that returns a row when the migration's change is already there (a store
   * whose user_version was lowered by hand, as tests do, runs later migrations again):
   * then `sql` is skipped. For changes SQLite cannot write with IF NOT EXISTS (ADD COLUMN).
   */
  doneIf?: string;
  /**
   * Removes secrets that were stored in clear: after it, the SQLite log is checkpointed and
   * cut to nothing, so no copy of the pages as they were stays in it (db.ts).
   */
  scrubs?: boolean;
}

/**
 * Rebuilds a table with the same columns under AUTOINCREMENT (SQLite's procedure: new
 * table, copy, drop, rename), so that an id, once given, is never given again.
 */
function autoincrement(table: string, columns: string, indexes: string[]): string {
  return `
      CREATE TABLE ${table}__new (${columns});
      INSERT INTO ${table}__new SELECT * FROM ${table};
      DROP TABLE ${table};
      ALTER TABLE ${table}__new RENAME TO ${table};
      ${indexes.map((i) => i + ";").join("\n")}`;
}

/** Raises the table's sequence to at least the largest of these expressions (ids seen elsewhere). */
function seedSequence(table: string, seen: string[]): string {
  const max = `max(${["0", ...seen.map((q) => `coalesce((${q}), 0)`), `coalesce((SELECT max(seq) FROM sqlite_sequence WHERE name = '${table}'), 0)`].join(", ")})`;
  return `
      INSERT INTO sqlite_sequence (name, seq) SELECT '${table}__seed', ${max};
      DELETE FROM sqlite_sequence WHERE name = '${table}';
      UPDATE sqlite_sequence SET name = '${table}' WHERE name = '${table}__seed';`;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "accounts, orgs, apps, keys, tokens, jobs",
    sql: `
      CREATE TABLE users (
        id          INTEGER PRIMARY KEY,
        email       TEXT NOT NULL UNIQUE COLLATE NOCASE,
        name        TEXT,
        created_at  INTEGER NOT NULL
      );
      CREATE TABLE orgs (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        plan        TEXT NOT NULL DEFAULT 'free',
        created_at  INTEGER NOT NULL,
        deleted_at  INTEGER
      );
      CREATE TABLE members (
        org_id      INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        role        TEXT NOT NULL CHECK (role IN ('owner','admin','member','viewer')),
        created_at  INTEGER NOT NULL,
        PRIMARY KEY (org_id, user_id)
      );
      CREATE INDEX members_by_user ON members(user_id);
      CREATE TABLE apps (
        id                     INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
        org_id                 INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        kind                   TEXT NOT NULL CHECK (kind IN ('app','web')),
        name                   TEXT NOT NULL,
        origins                TEXT NOT NULL DEFAULT '[]',
        paused                 INTEGER NOT NULL DEFAULT 0,
        forwarding_secret_hash BLOB,
        created_at             INTEGER NOT NULL,
        deleted_at             INTEGER
      );
      CREATE INDEX apps_by_org ON apps(org_id);
      CREATE TABLE app_keys (
        key         TEXT PRIMARY KEY,
        app_id      INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
      );
      CREATE INDEX app_keys_by_app ON app_keys(app_id);
      CREATE TABLE jobs (
        id          INTEGER PRIMARY KEY,
        org_id      INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        app_id      INTEGER,
        kind        TEXT NOT NULL,
        state       TEXT NOT NULL CHECK (state IN ('pending','running','done','failed')),
        params      TEXT NOT NULL DEFAULT '{}',
        result      TEXT,
        error       TEXT,
        created_at  INTEGER NOT NULL,
        started_at  INTEGER,
        finished_at INTEGER
      );
      CREATE INDEX jobs_by_state ON jobs(state);
    `,
  },
  {
    version: 2,
    name: "sign-in links, sessions, invitations, API tokens, funnels, settings",
    sql: `
      CREATE TABLE settings (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL
      );
      -- Secrets are stored only as SHA-256 hashes: a copy of this file signs no one in.
      CREATE TABLE login_links (
        token_hash  TEXT PRIMARY KEY,
        email       TEXT NOT NULL COLLATE NOCASE,
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        used_at     INTEGER
      );
      CREATE INDEX login_links_by_expiry ON login_links(expires_at);
      CREATE TABLE sessions (
        id          TEXT PRIMARY KEY,
        token_hash  TEXT NOT NULL UNIQUE,
        user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        ended_at    INTEGER
      );
      CREATE INDEX sessions_by_user ON sessions(user_id);
      CREATE TABLE invitations (
        id          TEXT PRIMARY KEY,
        org_id      INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        email       TEXT NOT NULL COLLATE NOCASE,
        role        TEXT NOT NULL CHECK (role IN ('owner','admin','member','viewer')),
        token_hash  TEXT NOT NULL UNIQUE,
        invited_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        state       TEXT NOT NULL CHECK (state IN ('pending','withdrawn','replaced','used'))
      );
      CREATE INDEX invitations_by_org ON invitations(org_id, state);
      CREATE INDEX invitations_by_email ON invitations(email, state);
      CREATE TABLE api_tokens (
        id          INTEGER PRIMARY KEY,
        org_id      INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        name        TEXT NOT NULL,
        token_hash  TEXT NOT NULL UNIQUE,
        created_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
      );
      CREATE INDEX api_tokens_by_org ON api_tokens(org_id);
      CREATE TABLE funnels (
        id              INTEGER PRIMARY KEY,
        app_id          INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        name            TEXT NOT NULL,
        steps           TEXT NOT NULL,
        window_seconds  INTEGER NOT NULL,
        breakdown       TEXT,
        created_by      INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at      INTEGER NOT NULL
      );
      CREATE INDEX funnels_by_app ON funnels(app_id);
    `,
  },
  {
    version: 3,
    name: "daily visitor salts",
    sql: `
      -- One random salt per UTC day. Yesterday's is deleted once the day is over, so no
      -- visitor hash can be recomputed from stored data.
      CREATE TABLE salts (
        day   TEXT PRIMARY KEY,
        salt  TEXT NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: "checkpoint state of ingest and the event store",
    sql: `
      -- Written in one transaction per checkpoint, with the write-ahead log sequence it
      -- covers: after a crash, start-up loads this and replays only newer log records.
      CREATE TABLE checkpoint (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL
      );
      CREATE TABLE usage (
        app      INTEGER NOT NULL,
        day      TEXT NOT NULL,
        outcome  TEXT NOT NULL,
        count    INTEGER NOT NULL,
        PRIMARY KEY (app, day, outcome)
      ) WITHOUT ROWID;
      CREATE TABLE batch_answers (
        app       INTEGER NOT NULL,
        batch_id  TEXT NOT NULL,
        answer    TEXT NOT NULL,
        at        INTEGER NOT NULL,
        PRIMARY KEY (app, batch_id)
      ) WITHOUT ROWID;
      CREATE INDEX batch_answers_by_time ON batch_answers(at);
      CREATE TABLE quota (
        org    INTEGER NOT NULL,
        month  TEXT NOT NULL,
        used   INTEGER NOT NULL,
        PRIMARY KEY (org, month)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 5,
    name: "export downloads",
    sql: `
      -- A download link holds a random token; only its hash is kept. The row outlives the
      -- file so that an expired link answers 410 rather than 404.
      CREATE TABLE exports (
        token_hash  TEXT PRIMARY KEY,
        job_id      INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        file        TEXT NOT NULL,
        format      TEXT NOT NULL,
        expires_at  INTEGER NOT NULL,
        purged      INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX exports_by_expiry ON exports(expires_at);
    `,
  },
  {
    version: 6,
    name: "billing",
    sql: `
      -- An org's subscription as the payment provider last told us. orgs.plan stays the
      -- plan in force; this row says why (status, grace, scheduled end).
      CREATE TABLE billing (
        org_id           INTEGER PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
        customer_id      TEXT UNIQUE,
        subscription_id  TEXT,
        status           TEXT NOT NULL DEFAULT 'none' CHECK (status IN ('none','active','past_due','canceled')),
        period_end       INTEGER,
        cancel_at        INTEGER,
        grace_until      INTEGER,
        -- created time (ms) of the newest provider event applied: an older one arriving
        -- late is recorded but changes nothing.
        last_event_at    INTEGER NOT NULL DEFAULT 0,
        updated_at       INTEGER NOT NULL
      );
      -- Each provider event is handled once, also when it is delivered again after a restart.
      CREATE TABLE billing_events (
        id           TEXT PRIMARY KEY,
        type         TEXT NOT NULL,
        org_id       INTEGER,
        outcome      TEXT NOT NULL,
        received_at  INTEGER NOT NULL
      );
      CREATE INDEX billing_events_by_time ON billing_events(received_at);
    `,
  },
  {
    version: 7,
    name: "ids never given twice",
    rebuildsTables: true,
    // Until now a purged org's or app's id went to the next one created (INTEGER PRIMARY
    // KEY reuses the highest id once it is deleted), and rows, log records and files still
    // keyed by it reached the newcomer. The sequences start above every id that any kept
    // row names; durability/open.ts raises them further from the ids found on disk.
    sql: `
      ${autoincrement(
        "orgs",
        `id          INTEGER PRIMARY KEY AUTOINCREMENT,
        name        TEXT NOT NULL,
        plan        TEXT NOT NULL DEFAULT 'free',
        created_at  INTEGER NOT NULL,
        deleted_at  INTEGER`,
        [],
      )}
      ${autoincrement(
        "apps",
        `id                     INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id BETWEEN 1 AND 2147483647),
        org_id                 INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        kind                   TEXT NOT NULL CHECK (kind IN ('app','web')),
        name                   TEXT NOT NULL,
        origins                TEXT NOT NULL DEFAULT '[]',
        paused                 INTEGER NOT NULL DEFAULT 0,
        forwarding_secret_hash BLOB,
        created_at             INTEGER NOT NULL,
        deleted_at             INTEGER`,
        ["CREATE INDEX apps_by_org ON apps(org_id)"],
      )}
      ${autoincrement(
        "jobs",
        `id          INTEGER PRIMARY KEY AUTOINCREMENT,
        org_id      INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        app_id      INTEGER,
        kind        TEXT NOT NULL,
        state       TEXT NOT NULL CHECK (state IN ('pending','running','done','failed')),
        params      TEXT NOT NULL DEFAULT '{}',
        result      TEXT,
        error       TEXT,
        created_at  INTEGER NOT NULL,
        started_at  INTEGER,
        finished_at INTEGER`,
        ["CREATE INDEX jobs_by_state ON jobs(state)", "CREATE INDEX jobs_by_app ON jobs(app_id)"],
      )}
      ${autoincrement(
        "api_tokens",
        `id          INTEGER PRIMARY KEY AUTOINCREMENT,
        org_id      INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
        name        TEXT NOT NULL,
        token_hash  TEXT NOT NULL UNIQUE,
        created_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER`,
        ["CREATE INDEX api_tokens_by_org ON api_tokens(org_id)"],
      )}
      ${autoincrement(
        "funnels",
        `id              INTEGER PRIMARY KEY AUTOINCREMENT,
        app_id          INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        name            TEXT NOT NULL,
        steps           TEXT NOT NULL,
        window_seconds  INTEGER NOT NULL,
        breakdown       TEXT,
        created_by      INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at      INTEGER NOT NULL`,
        ["CREATE INDEX funnels_by_app ON funnels(app_id)"],
      )}
      ${seedSequence("orgs", ["SELECT max(org) FROM quota", "SELECT max(org_id) FROM billing_events"])}
      ${seedSequence("apps", ["SELECT max(app) FROM usage", "SELECT max(app) FROM batch_answers", "SELECT max(app_id) FROM jobs"])}
      ${seedSequence("jobs", ["SELECT max(job_id) FROM exports"])}
      ${seedSequence("api_tokens", [])}
      ${seedSequence("funnels", [])}
    `,
  },
  {
    version: 8,
    name: "what removed or demoted admins left behind",
    // Removal from an org, or demotion below admin, now withdraws the pending invitations
    // the person sent there and revokes the API tokens they created there (members.ts).
    // This does the same for those removed or demoted before: a live token or a pending
    // invitation whose creator is no longer an admin or owner of its org.
    sql: `
      UPDATE api_tokens SET revoked_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000
       WHERE revoked_at IS NULL AND created_by IS NOT NULL AND NOT EXISTS (
         SELECT 1 FROM members m WHERE m.org_id = api_tokens.org_id AND m.user_id = api_tokens.created_by AND m.role IN ('owner', 'admin'));
      UPDATE invitations SET state = 'withdrawn'
       WHERE state = 'pending' AND invited_by IS NOT NULL AND NOT EXISTS (
         SELECT 1 FROM members m WHERE m.org_id = invitations.org_id AND m.user_id = invitations.invited_by AND m.role IN ('owner', 'admin'));
    `,
  },
  {
    version: 9,
    name: "share links",
    // Read-only links to one app's statistics (src/domain/share-links.ts): the value is
    // stored only as its SHA-256, like API tokens; they go with their app. IF NOT EXISTS:
    // a store whose user_version was lowered by hand (tests do, to replay migration 8)
    // runs this again.
    sql: `
      CREATE TABLE IF NOT EXISTS share_links (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        app_id      INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
        name        TEXT NOT NULL,
        token_hash  TEXT NOT NULL UNIQUE,
        created_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
      );
      CREATE INDEX IF NOT EXISTS share_links_by_app ON share_links(app_id);
    `,
  },
  {
    version: 10,
    name: "app time zones",
    // Each app's statistics count days in its time zone (an IANA name; docs/metrics.md,
    // "Time zones and intervals"). Existing apps keep UTC, what they counted in before.
    sql: "ALTER TABLE apps ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';",
    doneIf: "SELECT 1 FROM pragma_table_info('apps') WHERE name = 'timezone'",
  },
  {
    version: 11,
    name: "visitor salts per time zone",
    // A salt per time zone in use and local day of that zone (src/ingest/salts.ts): a
    // person counts once per local day of the app. The salts kept so far were UTC days'.
    doneIf: "SELECT 1 FROM pragma_table_info('salts') WHERE name = 'zone'",
    sql: `
      CREATE TABLE salts__new (
        zone  TEXT NOT NULL,
        day   TEXT NOT NULL,
        salt  TEXT NOT NULL,
        PRIMARY KEY (zone, day)
      ) WITHOUT ROWID;
      INSERT INTO salts__new (zone, day, salt) SELECT 'UTC', day, salt FROM salts;
      DROP TABLE salts;
      ALTER TABLE salts__new RENAME TO salts;
    `,
  },
  {
    version: 12,
    name: "export links: who asked, revocable, no clear URL",
    // Until now the download link's URL, token included, was kept in jobs.result: whoever
    // read the store or a backup of it could download. Each export now has its row from
    // the moment it is asked for (the token is made then, and shown once, in that answer)
    // with who asked, so that the link is revoked when that person is no longer an admin
    // (members.ts) or by hand (DELETE /apps/{id}/exports/{export_id}). Existing links keep
    // working until they expire (at most 7 days), with who asked unknown; their URLs go.
    // A job left pending or running has no token anyone was shown: it fails, to be asked
    // again. A job with two rows (a crash between the insert and the job's end) keeps the
    // newer, whose URL its result named.
    scrubs: true,
    // Its trigger is there once it ran (a store whose user_version was lowered by hand).
    doneIf: "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'exports_revoked_with_asker'",
    sql: `
      CREATE TABLE exports__new (
        job_id        INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
        token_hash    TEXT NOT NULL UNIQUE,
        requested_by  INTEGER REFERENCES users(id) ON DELETE SET NULL,
        format        TEXT NOT NULL,
        file          TEXT,
        expires_at    INTEGER,
        purged        INTEGER NOT NULL DEFAULT 0,
        revoked_at    INTEGER
      );
      INSERT OR IGNORE INTO exports__new (job_id, token_hash, format, file, expires_at, purged)
        SELECT e.job_id, e.token_hash, e.format, e.file, e.expires_at, e.purged
          FROM exports e JOIN jobs j ON j.id = e.job_id ORDER BY e.job_id, e.expires_at DESC;
      DROP TABLE exports;
      ALTER TABLE exports__new RENAME TO exports;
      CREATE INDEX exports_by_expiry ON exports(expires_at);
      CREATE INDEX exports_by_requester ON exports(requested_by);
      UPDATE jobs SET result = json_remove(result, '$.url') WHERE kind = 'export' AND result IS NOT NULL;
      UPDATE jobs SET state = 'failed', finished_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000,
             error = 'asked for before an upgrade, which gives each export its link when it is asked for: export again'
       WHERE kind = 'export' AND state IN ('pending', 'running');
      -- A deleted account's links stop: requested_by becomes null (unknown) only once they are revoked.
      CREATE TRIGGER exports_revoked_with_asker BEFORE DELETE ON users BEGIN
        UPDATE exports SET revoked_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000
         WHERE requested_by = OLD.id AND revoked_at IS NULL;
      END;
    `,
  },
];

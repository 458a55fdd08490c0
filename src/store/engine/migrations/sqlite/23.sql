-- 23: binaries as each host resolved them — found (where, which version, by which provider)
-- or not (why, and the variable that names another one) — since a binary on one host is not
-- on another. Rows from before were found on the one host that wrote them (`machine_id` '').
CREATE TABLE binaries_new (
    machine_id    TEXT NOT NULL,          -- identity::machine_id; '' for rows from before
    name          TEXT NOT NULL,          -- as declared, placeholders filled
    plugin        TEXT NOT NULL,          -- the plugin it was resolved for
    override_key  TEXT NOT NULL,          -- the variable naming another one (NODE_BINARY)
    abspath       TEXT,                   -- NULL: not found
    version       TEXT,
    provider      TEXT,                   -- the abxpkg provider that found or installed it
    failure       TEXT,                   -- why it could not be had; NULL: found
    resolved_at   INTEGER NOT NULL,
    PRIMARY KEY (machine_id, name)
);
INSERT INTO binaries_new (machine_id, name, plugin, override_key, resolved_at)
    SELECT '', name, plugin, '', installed_at FROM binaries;
DROP TABLE binaries;
ALTER TABLE binaries_new RENAME TO binaries;

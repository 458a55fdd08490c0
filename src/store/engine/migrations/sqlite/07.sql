-- 7: binaries `abxd install` provisioned: a plugin whose declared binaries are not here does
-- not run (its hooks would otherwise install them on their own clock, mid-crawl).
CREATE TABLE binaries (
    name          TEXT PRIMARY KEY,       -- as declared, placeholders filled
    plugin        TEXT NOT NULL,          -- the plugin it was installed for
    detail        TEXT NOT NULL,          -- what the installer said (version, path)
    installed_at  INTEGER NOT NULL
);

-- 36: process rows counted by host, kind and status as they change, not at each `/metrics`
-- scrape (migration 35's index made that count a read of every row's entry, growing with the
-- history): each insert, status change and delete moves one count, in the statement's own
-- transaction, as the crawls' counts move (migration 32), split over 16 slots likewise so that
-- one host's workers ending hooks at once rarely wait for the same row. A row without a host
-- (written before migration 16) is counted under ''. A row's host and kind never change once
-- written, so only its status moves a count. Migration 35's index served nothing else and is
-- dropped.
--
-- Beside them, how many rows of each host ever ended, and how many hooks ever started: counts
-- that only grow (a pruned row still ended). A scrape that finds one grown by more than the
-- rows it read knows a row was committed late, and only then looks for it.
CREATE TABLE process_tallies (
    machine_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    slot        INTEGER NOT NULL,
    count       BIGINT NOT NULL,
    PRIMARY KEY (machine_id, kind, status, slot)
);
INSERT INTO process_tallies (machine_id, kind, status, slot, count)
    SELECT COALESCE(machine_id, ''), kind, status, id % 16, count(*) FROM processes
    GROUP BY COALESCE(machine_id, ''), kind, status, id % 16;
CREATE FUNCTION process_tally() RETURNS trigger LANGUAGE plpgsql AS $tally$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE process_tallies SET count = count - 1
            WHERE machine_id = COALESCE(OLD.machine_id, '') AND kind = OLD.kind
              AND status = OLD.status AND slot = OLD.id % 16;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO process_tallies (machine_id, kind, status, slot, count)
            VALUES (COALESCE(NEW.machine_id, ''), NEW.kind, NEW.status, NEW.id % 16, 1)
            ON CONFLICT (machine_id, kind, status, slot)
            DO UPDATE SET count = process_tallies.count + 1;
    END IF;
    RETURN NULL;
END
$tally$;
CREATE TRIGGER processes_tally_rows AFTER INSERT OR DELETE ON processes
    FOR EACH ROW EXECUTE FUNCTION process_tally();
CREATE TRIGGER processes_tally_update AFTER UPDATE OF status ON processes
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION process_tally();
DROP INDEX processes_by_kind_status;
CREATE TABLE process_moments (
    machine_id  TEXT NOT NULL,
    moment      TEXT NOT NULL CHECK (moment IN ('ended', 'hook_started')),
    slot        INTEGER NOT NULL,
    count       BIGINT NOT NULL,
    PRIMARY KEY (machine_id, moment, slot)
);
INSERT INTO process_moments (machine_id, moment, slot, count)
    SELECT COALESCE(machine_id, ''), 'ended', id % 16, count(*) FROM processes
    WHERE status IN ('exited', 'lost') GROUP BY COALESCE(machine_id, ''), id % 16;
INSERT INTO process_moments (machine_id, moment, slot, count)
    SELECT COALESCE(machine_id, ''), 'hook_started', id % 16, count(*) FROM processes
    WHERE kind = 'hook' AND started_at IS NOT NULL GROUP BY COALESCE(machine_id, ''), id % 16;
CREATE FUNCTION process_moment() RETURNS trigger LANGUAGE plpgsql AS $moment$
DECLARE
    new_moments TEXT[] := '{}';
    which TEXT;
BEGIN
    IF NEW.status IN ('exited', 'lost')
       AND (TG_OP = 'INSERT' OR OLD.status NOT IN ('exited', 'lost')) THEN
        new_moments := new_moments || 'ended'::TEXT;
    END IF;
    IF NEW.kind = 'hook' AND NEW.started_at IS NOT NULL
       AND (TG_OP = 'INSERT' OR OLD.started_at IS NULL) THEN
        new_moments := new_moments || 'hook_started'::TEXT;
    END IF;
    FOREACH which IN ARRAY new_moments LOOP
        INSERT INTO process_moments (machine_id, moment, slot, count)
            VALUES (COALESCE(NEW.machine_id, ''), which, NEW.id % 16, 1)
            ON CONFLICT ON CONSTRAINT process_moments_pkey
            DO UPDATE SET count = process_moments.count + 1;
    END LOOP;
    RETURN NULL;
END
$moment$;
CREATE TRIGGER processes_moments AFTER INSERT OR UPDATE OF status, started_at ON processes
    FOR EACH ROW EXECUTE FUNCTION process_moment();

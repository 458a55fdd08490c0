-- 36: process rows counted by host, kind and status as they change, not at each `/metrics`
-- scrape (migration 35's index made that count a read of every row's entry, ~30 ms at 250 000
-- rows and growing with the history): each insert, status change and delete moves one count,
-- in the statement's own transaction, as the crawls' counts move (migration 32), split over 16
-- slots likewise. A row without a host (written before migration 16) is counted under ''. A
-- row's host and kind never change once written, so only its status moves a count. Migration
-- 35's index served nothing else and is dropped.
--
-- Beside them, how many rows of each host ever ended, and how many hooks ever started: counts
-- that only grow (a pruned row still ended). A scrape that finds one grown by more than the
-- rows it read knows a row was committed late, and only then looks for it.
CREATE TABLE process_tallies (
    machine_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    slot        INTEGER NOT NULL,
    count       INTEGER NOT NULL,
    PRIMARY KEY (machine_id, kind, status, slot)
);
INSERT INTO process_tallies (machine_id, kind, status, slot, count)
    SELECT COALESCE(machine_id, ''), kind, status, id % 16, count(*) FROM processes
    GROUP BY COALESCE(machine_id, ''), kind, status, id % 16;
CREATE TRIGGER processes_tally_insert AFTER INSERT ON processes BEGIN
    INSERT INTO process_tallies (machine_id, kind, status, slot, count)
        VALUES (COALESCE(NEW.machine_id, ''), NEW.kind, NEW.status, NEW.id % 16, 1)
        ON CONFLICT (machine_id, kind, status, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER processes_tally_update AFTER UPDATE OF status ON processes
    WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE process_tallies SET count = count - 1
        WHERE machine_id = COALESCE(OLD.machine_id, '') AND kind = OLD.kind
          AND status = OLD.status AND slot = OLD.id % 16;
    INSERT INTO process_tallies (machine_id, kind, status, slot, count)
        VALUES (COALESCE(NEW.machine_id, ''), NEW.kind, NEW.status, NEW.id % 16, 1)
        ON CONFLICT (machine_id, kind, status, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER processes_tally_delete AFTER DELETE ON processes BEGIN
    UPDATE process_tallies SET count = count - 1
        WHERE machine_id = COALESCE(OLD.machine_id, '') AND kind = OLD.kind
          AND status = OLD.status AND slot = OLD.id % 16;
END;
DROP INDEX processes_by_kind_status;
CREATE TABLE process_moments (
    machine_id  TEXT NOT NULL,
    moment      TEXT NOT NULL CHECK (moment IN ('ended', 'hook_started')),
    slot        INTEGER NOT NULL,
    count       INTEGER NOT NULL,
    PRIMARY KEY (machine_id, moment, slot)
);
INSERT INTO process_moments (machine_id, moment, slot, count)
    SELECT COALESCE(machine_id, ''), 'ended', id % 16, count(*) FROM processes
    WHERE status IN ('exited', 'lost') GROUP BY COALESCE(machine_id, ''), id % 16;
INSERT INTO process_moments (machine_id, moment, slot, count)
    SELECT COALESCE(machine_id, ''), 'hook_started', id % 16, count(*) FROM processes
    WHERE kind = 'hook' AND started_at IS NOT NULL GROUP BY COALESCE(machine_id, ''), id % 16;
CREATE TRIGGER processes_ended_insert AFTER INSERT ON processes
    WHEN NEW.status IN ('exited', 'lost') BEGIN
    INSERT INTO process_moments (machine_id, moment, slot, count)
        VALUES (COALESCE(NEW.machine_id, ''), 'ended', NEW.id % 16, 1)
        ON CONFLICT (machine_id, moment, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER processes_ended_update AFTER UPDATE OF status ON processes
    WHEN OLD.status NOT IN ('exited', 'lost') AND NEW.status IN ('exited', 'lost') BEGIN
    INSERT INTO process_moments (machine_id, moment, slot, count)
        VALUES (COALESCE(NEW.machine_id, ''), 'ended', NEW.id % 16, 1)
        ON CONFLICT (machine_id, moment, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER processes_hook_started_insert AFTER INSERT ON processes
    WHEN NEW.kind = 'hook' AND NEW.started_at IS NOT NULL BEGIN
    INSERT INTO process_moments (machine_id, moment, slot, count)
        VALUES (COALESCE(NEW.machine_id, ''), 'hook_started', NEW.id % 16, 1)
        ON CONFLICT (machine_id, moment, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER processes_hook_started_update AFTER UPDATE OF started_at ON processes
    WHEN NEW.kind = 'hook' AND OLD.started_at IS NULL AND NEW.started_at IS NOT NULL BEGIN
    INSERT INTO process_moments (machine_id, moment, slot, count)
        VALUES (COALESCE(NEW.machine_id, ''), 'hook_started', NEW.id % 16, 1)
        ON CONFLICT (machine_id, moment, slot) DO UPDATE SET count = count + 1;
END;

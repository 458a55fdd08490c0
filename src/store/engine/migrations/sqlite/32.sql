-- 32: a crawl's snapshots and results counted by status as they change, not at each listing
-- (counting a million results took 80 ms): each insert, status change and delete moves one
-- count, in the statement's own transaction. A count is split over 16 slots (the row's id
-- modulo 16), summed when read, so that workers finishing results of one crawl at once — on
-- PostgreSQL, several hosts' — rarely wait for the same row.
CREATE TABLE crawl_tallies (
    crawl_id    INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    slot        INTEGER NOT NULL,
    count       INTEGER NOT NULL,
    PRIMARY KEY (crawl_id, kind, status, slot)
);
INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
    SELECT crawl_id, 'snapshot', status, id % 16, count(*) FROM snapshots
    GROUP BY crawl_id, status, id % 16;
INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
    SELECT crawl_id, 'result', status, id % 16, count(*) FROM results
    GROUP BY crawl_id, status, id % 16;
CREATE TRIGGER snapshots_tally_insert AFTER INSERT ON snapshots BEGIN
    INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
        VALUES (NEW.crawl_id, 'snapshot', NEW.status, NEW.id % 16, 1)
        ON CONFLICT (crawl_id, kind, status, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER snapshots_tally_update AFTER UPDATE OF status ON snapshots
    WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE crawl_tallies SET count = count - 1
        WHERE crawl_id = OLD.crawl_id AND kind = 'snapshot' AND status = OLD.status
          AND slot = OLD.id % 16;
    INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
        VALUES (NEW.crawl_id, 'snapshot', NEW.status, NEW.id % 16, 1)
        ON CONFLICT (crawl_id, kind, status, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER snapshots_tally_delete AFTER DELETE ON snapshots BEGIN
    UPDATE crawl_tallies SET count = count - 1
        WHERE crawl_id = OLD.crawl_id AND kind = 'snapshot' AND status = OLD.status
          AND slot = OLD.id % 16;
END;
CREATE TRIGGER results_tally_insert AFTER INSERT ON results BEGIN
    INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
        VALUES (NEW.crawl_id, 'result', NEW.status, NEW.id % 16, 1)
        ON CONFLICT (crawl_id, kind, status, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER results_tally_update AFTER UPDATE OF status ON results
    WHEN OLD.status IS NOT NEW.status BEGIN
    UPDATE crawl_tallies SET count = count - 1
        WHERE crawl_id = OLD.crawl_id AND kind = 'result' AND status = OLD.status
          AND slot = OLD.id % 16;
    INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
        VALUES (NEW.crawl_id, 'result', NEW.status, NEW.id % 16, 1)
        ON CONFLICT (crawl_id, kind, status, slot) DO UPDATE SET count = count + 1;
END;
CREATE TRIGGER results_tally_delete AFTER DELETE ON results BEGIN
    UPDATE crawl_tallies SET count = count - 1
        WHERE crawl_id = OLD.crawl_id AND kind = 'result' AND status = OLD.status
          AND slot = OLD.id % 16;
END;

-- 32: a crawl's snapshots and results counted by status as they change, not at each listing
-- (counting a million results took 80 ms): each insert, status change and delete moves one
-- count, in the statement's own transaction. A count is split over 16 slots (the row's id
-- modulo 16), summed when read, so that workers finishing results of one crawl at once —
-- several hosts' — rarely wait for the same row.
CREATE TABLE crawl_tallies (
    crawl_id    BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    slot        INTEGER NOT NULL,
    count       BIGINT NOT NULL,
    PRIMARY KEY (crawl_id, kind, status, slot)
);
INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
    SELECT crawl_id, 'snapshot', status, id % 16, count(*) FROM snapshots
    GROUP BY crawl_id, status, id % 16;
INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
    SELECT crawl_id, 'result', status, id % 16, count(*) FROM results
    GROUP BY crawl_id, status, id % 16;
CREATE FUNCTION crawl_tally() RETURNS trigger LANGUAGE plpgsql AS $tally$
DECLARE
    counted TEXT := CASE TG_TABLE_NAME WHEN 'results' THEN 'result' ELSE 'snapshot' END;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE crawl_tallies SET count = count - 1
            WHERE crawl_id = OLD.crawl_id AND kind = counted AND status = OLD.status
              AND slot = OLD.id % 16;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO crawl_tallies (crawl_id, kind, status, slot, count)
            VALUES (NEW.crawl_id, counted, NEW.status, NEW.id % 16, 1)
            ON CONFLICT (crawl_id, kind, status, slot)
            DO UPDATE SET count = crawl_tallies.count + 1;
    END IF;
    RETURN NULL;
END
$tally$;
CREATE TRIGGER snapshots_tally_rows AFTER INSERT OR DELETE ON snapshots
    FOR EACH ROW EXECUTE FUNCTION crawl_tally();
CREATE TRIGGER snapshots_tally_update AFTER UPDATE OF status ON snapshots
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION crawl_tally();
CREATE TRIGGER results_tally_rows AFTER INSERT OR DELETE ON results
    FOR EACH ROW EXECUTE FUNCTION crawl_tally();
CREATE TRIGGER results_tally_update AFTER UPDATE OF status ON results
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION crawl_tally();

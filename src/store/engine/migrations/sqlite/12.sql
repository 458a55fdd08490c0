-- 12: times that decide are on the boot clock (`boot_clock_ms`), never the wall clock: a
-- row's deadline as well (`deadline_at` stays, for people); crawls' and snapshots' `retry_at`
-- are boot-clock ms from now on (rebased at each start in another boot).
ALTER TABLE processes ADD COLUMN deadline_clock INTEGER;

-- 10: cgroup containment — the cgroup a row's process ran in, and what the cgroup measured
-- of it (CPU time of it and its descendants, peak memory where the controller is enabled).
ALTER TABLE processes ADD COLUMN cgroup TEXT;
ALTER TABLE processes ADD COLUMN cpu_usec INTEGER;
ALTER TABLE processes ADD COLUMN memory_peak INTEGER;

-- How late a schedule's last tick started (ms after its fire time): braid schedules shows it, so a leader that
-- cannot keep up with its schedules is seen.
ALTER TABLE {{schema}}.schedules ADD COLUMN last_lag_ms bigint;

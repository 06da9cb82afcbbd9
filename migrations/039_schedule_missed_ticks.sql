-- The ticks a schedule's leader could not start on time and never will (issue 54): those it passed over because
-- they fell out of the schedule's catch-up window while the leader was behind, counted per schedule, with when the
-- last of them was. braid schedules, the UI and the metrics show them; the leader warns while they grow.
ALTER TABLE {{schema}}.schedules ADD COLUMN missed_ticks bigint NOT NULL DEFAULT 0, ADD COLUMN missed_at timestamptz;

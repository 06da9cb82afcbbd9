-- One leader at a time, provably (issue 23). Each takeover of the lease starts a new epoch; the leader's writes
-- carry it (a fencing token), and a write of an epoch that has moved on is refused. The history keeps each
-- epoch's holder, when it was taken and how far it was last renewed, so one can check that no two overlap.
ALTER TABLE {{schema}}.leader ADD COLUMN epoch bigint NOT NULL DEFAULT 1;
CREATE TABLE {{schema}}.leader_history (
  epoch bigint PRIMARY KEY,
  holder text NOT NULL,
  elected_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
INSERT INTO {{schema}}.leader_history (epoch, holder, elected_at, expires_at) SELECT epoch, holder, elected_at, expires_at FROM {{schema}}.leader;

-- A signed webhook's signature, remembered for its scheme's tolerance window (issue 54): the same signed request
-- again is a replay, refused (409 event_replayed) with nothing recorded. Written in the transaction of the event it
-- records; retention forgets a receipt once its window has passed.
CREATE TABLE {{schema}}.webhook_receipts (
  digest text PRIMARY KEY,
  event text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX webhook_receipts_expires ON {{schema}}.webhook_receipts (expires_at);

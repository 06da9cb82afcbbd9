-- People who use braid's API and UI (issue 42): each with a role (viewer, operator, admin), optionally limited
-- to workflow names matching a glob, and a token kept only as a salted scrypt hash (its id finds the row).
CREATE TABLE {{schema}}.users (
  name text PRIMARY KEY,
  role text NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  workflows text,
  token_id text NOT NULL UNIQUE,
  token_hash text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz
);

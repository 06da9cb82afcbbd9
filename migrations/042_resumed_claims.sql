-- A claim starts where the worker's last claim of the queue stopped (issue 55): the entries of claimed tasks stay
-- in tasks_fetch until vacuum, so a scan from the start walked every task claimed before, its cost growing with
-- the queue. claim() takes that point (p_after, the `after` its last call returned; null: from the start, as
-- before) and returns where it stopped; it goes on from the start only when the tasks after the point run short.
-- The eight-argument claim is dropped so no call is ambiguous (a call with seven or eight arguments means what it
-- meant: protocol revision 1). complete() takes its workflows' locks once, before any task row is written, rather
-- than as a semi-join per task (quadratic in a batch of many workflows: 124,750 rows compared for 500).
DROP FUNCTION IF EXISTS {{schema}}.claim(text, text[], int, text, timestamptz, bigint[], int, text[]);
-- braid:generate protocol sha256:b0b0a4fff5a1e69d

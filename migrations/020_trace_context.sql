-- OpenTelemetry (issue 26): the span a workflow attempt began with, and the span that sent a signal, as W3C
-- traceparent text, so spans made later in any process (a task attempt, a resolved wait) name them as parent
-- or link. Null when nothing was recorded.
ALTER TABLE {{schema}}.workflows ADD COLUMN trace_context text;
ALTER TABLE {{schema}}.signals ADD COLUMN trace_context text;

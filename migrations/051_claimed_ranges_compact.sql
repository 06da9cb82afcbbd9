-- A claim can return the running ranges it wrote rather than their items one by one (issue 55): claim() takes
-- p_ranges (default false, as before: every item in tasks, as the Python worker reads them) and then returns the
-- ranges in a column of their own, an entry each (sql/range-claims.ts, rangesJsonSql), which the TypeScript worker
-- reads as their items. No item is made a row in SQL or in JSON, which was most of the claim's cost per ranged item
-- (11.5 -> 7.5 µs of server CPU per item, claims of 500 in a loop). The result gains a column, so the
-- nine-argument claim is dropped first (a call with up to nine arguments means what it meant: protocol revision 1).
DROP FUNCTION IF EXISTS {{schema}}.claim(text, text[], int, text, timestamptz, bigint[], int, text[], jsonb);
-- braid:generate protocol sha256:75a6b5fd033da718

-- braid_workflows reads finished workflows' counts per name and state from the planner's statistics once the
-- table is large (a count at every scrape would read every row): a most-common-values list over the pair.
CREATE STATISTICS {{schema}}.workflows_name_state (mcv) ON name, state FROM {{schema}}.workflows;
ALTER STATISTICS {{schema}}.workflows_name_state SET STATISTICS 1000;

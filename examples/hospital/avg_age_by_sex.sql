-- Average patient age per sex (a grouped AVG).
-- One patient row touches one group; ages lie in [0, 120] (CHECK), so the upper bound is M - m = 120.
SELECT sex, AVG(age) FROM Pat GROUP BY sex

-- A single-table count: one patient row changes it by at most 1.
SELECT COUNT(*) FROM Pat WHERE sex = 'F'

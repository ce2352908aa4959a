-- Accounts that follow someone other than themselves (COUNT DISTINCT with a filter).
-- The counted column is in the one follows row, so one row adds at most one account: 1 (tight).
SELECT COUNT(DISTINCT src) FROM follows WHERE src <> dst

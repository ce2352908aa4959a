-- Items sold: one user adds at most 20 orders × 5 items = 100.
SELECT COUNT(*) FROM items i JOIN products p ON p.pid = i.pid

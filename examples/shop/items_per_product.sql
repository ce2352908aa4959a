-- Items sold per product (products are public): one person's 100 items change the
-- histogram by at most 100 in all.
SELECT i.pid, COUNT(*) FROM items i GROUP BY i.pid

-- Users with at least one order (a semi-join): one person adds at most 1.
SELECT COUNT(*) FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.uid = u.id)

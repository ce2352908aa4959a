-- How many orders were placed: one user adds at most 20 (their orders).
SELECT COUNT(*) FROM users u JOIN orders o ON o.uid = u.id

-- Pairs of orders placed by the same user: one person's 20 orders make 20 × 20 = 400 pairs.
SELECT COUNT(*) FROM orders o1 JOIN orders o2 ON o1.uid = o2.uid

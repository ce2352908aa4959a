-- Revenue: one user's orders add at most 20 × 500.
SELECT SUM(total) FROM orders

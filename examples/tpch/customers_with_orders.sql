-- Customers with at least one order (a semijoin): 1.
SELECT COUNT(DISTINCT c.c_custkey)
FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey

-- Rows of customer ⋈ orders: one new customer row matches at most 41 orders; bound 41 (issue 10).
SELECT COUNT(*)
FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey

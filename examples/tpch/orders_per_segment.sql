-- A histogram: orders per market segment.
SELECT c.c_mktsegment, COUNT(*)
FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey
GROUP BY c.c_mktsegment

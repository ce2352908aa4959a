-- A histogram with a date filter: orders of 1995 per market segment.
-- A new customer row brings at most 41 orders (orders[o_custkey->o_orderkey]<=41) into one group: 41 (tight).
SELECT c.c_mktsegment, COUNT(o.o_orderkey) FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey
WHERE o.o_orderdate BETWEEN DATE '1995-01-01' AND DATE '1995-12-31' GROUP BY c.c_mktsegment

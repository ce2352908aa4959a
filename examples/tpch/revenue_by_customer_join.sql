-- Total order value over the join: 41 orders per customer times the largest price.
SELECT SUM(o.o_totalprice)
FROM customer c JOIN orders o ON o.o_custkey = c.c_custkey
WHERE c.c_mktsegment = 'BUILDING'

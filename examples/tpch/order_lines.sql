-- Distinct (order, line number) pairs of urgent orders: at most 7 per order.
SELECT COUNT(DISTINCT l.l_orderkey, l.l_linenumber)
FROM orders o JOIN lineitem l ON l.l_orderkey = o.o_orderkey
WHERE o.o_orderpriority = '1-URGENT'

-- Total order value of customers in the BUILDING segment: a SUM over customer x orders.
-- A new customer row joins at most 41 orders (orders[o_custkey->o_orderkey]<=41), each at most 600000: 24600000.
SELECT SUM(o.o_totalprice) FROM orders o JOIN customer c ON c.c_custkey = o.o_custkey WHERE c.c_mktsegment = 'BUILDING'

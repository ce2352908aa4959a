-- Average order value per priority (a grouped AVG).
-- One order touches one group; o_totalprice lies in [0, 600000] (CHECK), so the upper bound is M - m = 600000.
SELECT o_orderpriority, AVG(o_totalprice) FROM orders GROUP BY o_orderpriority

-- Order lines of customers in region 2: a four-table join, unbounded.
-- A new nation row matches any number of existing customers (nothing bounds customers per nation): infinity.
SELECT COUNT(*) FROM lineitem l JOIN orders o ON o.o_orderkey = l.l_orderkey JOIN customer c ON c.c_custkey = o.o_custkey JOIN nation n ON n.n_nationkey = c.c_nationkey WHERE n.n_regionkey = 2

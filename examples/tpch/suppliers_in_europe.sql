-- Suppliers of European nations: unbounded (a nation may have any number of suppliers).
SELECT COUNT(*)
FROM supplier s JOIN nation n ON s.s_nationkey = n.n_nationkey
               JOIN region r ON n.n_regionkey = r.r_regionkey
WHERE r.r_name = 'EUROPE'

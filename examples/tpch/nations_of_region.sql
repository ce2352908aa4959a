-- Nations with their region: a region row brings at most 5 nations.
SELECT COUNT(*)
FROM nation n JOIN region r ON n.n_regionkey = r.r_regionkey

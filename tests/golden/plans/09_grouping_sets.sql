SELECT r.b AS g1, s.c AS g2, GROUPING(s.c), SUM(r.a) FROM r JOIN s ON s.r = r.k GROUP BY r.b, GROUPING SETS ((s.c), ()) ORDER BY 1

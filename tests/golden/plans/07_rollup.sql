SELECT r.a AS g1, s.c AS g2, COUNT(*) FROM r JOIN s ON s.r = r.k GROUP BY ROLLUP (r.a, s.c)

SELECT r.a AS g, COUNT(*) FROM r LEFT JOIN s ON s.r = r.k GROUP BY ROLLUP (r.a)

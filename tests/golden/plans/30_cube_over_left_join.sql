SELECT r.a AS g1, r.b AS g2, SUM(r.b) FROM r LEFT JOIN s ON s.r = r.k GROUP BY CUBE (r.a, r.b)

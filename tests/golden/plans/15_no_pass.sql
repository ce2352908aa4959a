SELECT r.a AS g, COUNT(*) FROM r JOIN s ON s.r = r.k WHERE r.b > 0 GROUP BY r.a

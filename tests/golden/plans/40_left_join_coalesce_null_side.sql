SELECT SUM(r.b - COALESCE(s.c, 0)) FROM r LEFT JOIN s ON s.r = r.k

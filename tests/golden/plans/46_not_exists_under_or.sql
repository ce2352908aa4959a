SELECT r.a, COUNT(DISTINCT r.b), SUM(r.b) FROM r WHERE r.b > 0 OR NOT EXISTS (SELECT 1 FROM s WHERE s.r = r.k AND s.c <> r.a) GROUP BY r.a

SELECT COUNT(*) FROM (SELECT r.a AS v FROM r LEFT JOIN s ON s.r = r.k) AS t WHERE t.v > 0

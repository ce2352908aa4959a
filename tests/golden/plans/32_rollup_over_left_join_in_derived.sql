SELECT t.g AS g, SUM(t.v) FROM (SELECT r.a AS g, r.b AS v FROM r LEFT JOIN s ON s.r = r.k) AS t GROUP BY ROLLUP (t.g)

SELECT u.x AS g1, u.y AS g2, SUM(u.x), COUNT(*) FROM u GROUP BY CUBE (u.x, u.y)

SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k LEFT JOIN u ON u.y = s.c

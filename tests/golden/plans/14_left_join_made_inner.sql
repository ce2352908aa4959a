SELECT COUNT(*) FROM r LEFT JOIN s ON s.r = r.k WHERE s.c > 1

-- Directed 2-edge paths a -> b -> c: 2·d = 40.
SELECT COUNT(*) FROM follows e1 JOIN follows e2 ON e1.dst = e2.src

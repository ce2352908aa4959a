-- Directed 3-edge paths: 3·d² = 1200 (Thm 17 multiplies per variable: 2d³ + d² = 16400).
SELECT COUNT(*)
FROM follows e1 JOIN follows e2 ON e1.dst = e2.src JOIN follows e3 ON e2.dst = e3.src

-- Directed triangles a -> b -> c -> a, as ordered triples: 3·d = 60.
SELECT COUNT(*)
FROM follows e1 JOIN follows e2 ON e1.dst = e2.src JOIN follows e3 ON e2.dst = e3.src
WHERE e3.dst = e1.src

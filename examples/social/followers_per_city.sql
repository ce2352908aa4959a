-- A histogram: follow edges per city of the followed person (GROUP BY).
-- A new person row receives at most 20 followers (follows[dst->src]<=20): 20, and a witness reaches it.
SELECT p.city, COUNT(*) FROM follows f JOIN person p ON p.id = f.dst GROUP BY p.city

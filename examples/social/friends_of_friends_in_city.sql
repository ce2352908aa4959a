-- People two hops from someone in Paris: one new Paris row reaches at most 20·20 = 400.
SELECT COUNT(DISTINCT e2.dst)
FROM person p JOIN follows e1 ON e1.src = p.id JOIN follows e2 ON e2.src = e1.dst
WHERE p.city = 'Paris'

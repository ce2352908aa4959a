-- Pairs of people living in the same city: unbounded (a city may hold any number of people).
SELECT COUNT(*) FROM person p JOIN person q ON p.city = q.city WHERE p.id <> q.id

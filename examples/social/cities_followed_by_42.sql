-- COUNT DISTINCT: cities of the people that account 42 follows.
-- A follows row adds one followed person, a person row one city (person[id->city]): 1 (tight).
SELECT COUNT(DISTINCT p.city) FROM follows f JOIN person p ON p.id = f.dst WHERE f.src = 42

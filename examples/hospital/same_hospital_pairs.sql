-- A self-join: pairs of patients treated in the same hospital (unbounded).
SELECT COUNT(*)
FROM Pat a JOIN Pat b ON a.hos = b.hos
WHERE a.id <> b.id

-- Example 3: oncological patients in hospitals of the state of New York.
SELECT COUNT(DISTINCT Pat.id)
FROM Doc, Pat, PatDoc, Hos
WHERE Doc.specialty = 'O'
  AND Pat.hos = Doc.hos
  AND PatDoc.pat = Pat.id
  AND PatDoc.doc = Doc.id
  AND Hos.id = Pat.hos
  AND Hos.loc = 'NY'

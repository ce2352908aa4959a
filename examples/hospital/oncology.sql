-- Example 2: oncology doctors treating female patients in the hospital where they practise.
SELECT COUNT(DISTINCT Doc.id)
FROM Pat, Doc, PatDoc
WHERE Doc.specialty = 'O'
  AND Pat.sex = 'F'
  AND Pat.hos = Doc.hos
  AND PatDoc.pat = Pat.id
  AND PatDoc.doc = Doc.id

-- A self-join: pairs of distinct doctors attending the same patient.
-- Upper 6: 3 doctors per patient (PatDoc[pat->doc]<=3) on each side; the witness proves 2, the truth here
-- (the new row is one of its patient's 3 doctors), so the rule is loose for this self-join.
SELECT COUNT(*) FROM PatDoc a JOIN PatDoc b ON a.pat = b.pat WHERE a.doc < b.doc

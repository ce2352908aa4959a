-- Total age over (patient, oncologist) pairs: a SUM over a three-table join.
-- One Doc row joins at most 50 patients (PatDoc[doc->pat]<=50), each age at most 120: 50 x 120 = 6000.
SELECT SUM(p.age) FROM Pat p JOIN PatDoc pd ON pd.pat = p.id JOIN Doc d ON d.id = pd.doc WHERE d.specialty = 'O'

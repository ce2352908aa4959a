-- Rows of the patient-doctor join: bounded once each patient has at most a few doctors.
SELECT COUNT(*)
FROM Pat p JOIN PatDoc pd ON pd.pat = p.id
WHERE p.age >= 65

-- Doctors that attend at least one patient: every atom holds the counted doctor.
SELECT COUNT(DISTINCT pd.doc) FROM PatDoc pd JOIN Doc d ON d.id = pd.doc

-- A self-join: pairs of distinct doctors attending the same patient.
-- Upper 2: the new row is one of its patient's 3 doctors (PatDoc[pat->doc]<=3) and pairs once with each
-- of the other two, a.doc < b.doc holding for (t, u) or for (u, t) and never for (t, t) (docs/rules.md,
-- rule ordered-self-join); the witness proves 2.
SELECT COUNT(*) FROM PatDoc a JOIN PatDoc b ON a.pat = b.pat WHERE a.doc < b.doc

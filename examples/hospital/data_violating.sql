-- examples/hospital/data.sql with ONE seeded violation, for the docs and tests:
-- patient 1 has a fourth attending doctor (doctor 4), which breaks
-- PatDoc[pat->doc]<=3 of examples/hospital/constraints.txt.  Everything else is
-- the same data and satisfies the schema's keys and the other constraint.
--   cat examples/hospital/schema.sql examples/hospital/data_violating.sql | sqlite3 bad.db
--   cqsens profile --db sqlite:///bad.db --constraints examples/hospital/constraints.txt

INSERT INTO Hos (id, loc) VALUES
    (1, 'NY'),
    (2, 'NY'),
    (3, 'CA'),
    (4, 'TX');

-- specialty: O = oncology, C = cardiology, P = paediatrics
INSERT INTO Doc (id, specialty, hos) VALUES
    (1, 'O', 1),
    (2, 'O', 1),
    (3, 'C', 1),
    (4, 'O', 2),
    (5, 'P', 2),
    (6, 'C', 3),
    (7, 'O', 3),
    (8, 'P', 4);

INSERT INTO Pat (id, sex, hos, age) VALUES
    (1, 'F', 1, 34),
    (2, 'M', 1, 51),
    (3, 'F', 1, 67),
    (4, 'F', 2, 8),
    (5, 'M', 2, 45),
    (6, 'F', 3, 72),
    (7, 'M', 3, 29),
    (8, 'F', 3, 55),
    (9, 'M', 4, 3),
    (10, 'F', 4, 88),
    (11, 'F', 1, 41),
    (12, 'M', 2, 60);

INSERT INTO PatDoc (pat, doc) VALUES
    (1, 1), (1, 2), (1, 3),
    (1, 4),  -- the seeded violation: a 4th doctor for patient 1
    (2, 3),
    (3, 1), (3, 2),
    (4, 4), (4, 5),
    (5, 4),
    (6, 6), (6, 7), (6, 1),
    (7, 6),
    (8, 7),
    (9, 8),
    (10, 8), (10, 6),
    (11, 1), (11, 2),
    (12, 5);

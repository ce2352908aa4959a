-- The running example of Arapinis, Figueira, Gaboardi (ICALP 2016), Example 1.
CREATE TABLE Hos (
    id   INTEGER PRIMARY KEY,          -- hospital
    loc  TEXT                          -- its location (state)
);
CREATE TABLE Pat (
    id   INTEGER PRIMARY KEY,          -- patient
    sex  TEXT,
    hos  INTEGER,                      -- hospital where the patient is treated
    age  INTEGER NOT NULL CHECK (age BETWEEN 0 AND 120)
);
CREATE TABLE Doc (
    id        INTEGER PRIMARY KEY,     -- doctor
    specialty TEXT,
    hos       INTEGER                  -- hospital where the doctor practises
);
CREATE TABLE PatDoc (
    pat  INTEGER,                      -- patient
    doc  INTEGER,                      -- one of the patient's attending doctors
    PRIMARY KEY (pat, doc)
);

-- A social network: who follows whom, with degree bounds in constraints.txt.
CREATE TABLE person (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
CREATE TABLE follows (src INTEGER, dst INTEGER, PRIMARY KEY (src, dst));

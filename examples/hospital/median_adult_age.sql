-- Median age of adult patients: the filter narrows ages to [18, 120].
-- One row added or removed moves a median by at most (M - m)/2 = (120 - 18)/2 = 51.
SELECT MEDIAN(age) FROM Pat WHERE age >= 18

-- Median account balance of BUILDING customers (a filtered MEDIAN).
-- Balances lie in [-999.99, 9999.99] (CHECK): one row moves a median by at most (M - m)/2 = 5499.99.
SELECT MEDIAN(c_acctbal) FROM customer WHERE c_mktsegment = 'BUILDING'

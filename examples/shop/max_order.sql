-- The largest order total: a range bound, 500 − 0, whatever the person adds.
SELECT MAX(total) FROM orders

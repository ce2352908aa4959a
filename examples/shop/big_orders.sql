-- Orders above 100: the filter only removes rows, so still at most 20 per person.
SELECT COUNT(*) FROM orders WHERE total > 100

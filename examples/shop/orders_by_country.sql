-- Orders per country (a histogram): one person's 20 orders all land in their country's
-- group, so the ℓ1 change is 20.
SELECT u.country, COUNT(*) FROM users u JOIN orders o ON o.uid = u.id GROUP BY u.country

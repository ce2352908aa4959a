-- How many users: one person is one users row, so 1.
SELECT COUNT(*) FROM users

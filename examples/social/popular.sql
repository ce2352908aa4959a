-- Follow edges into accounts named 'news': a new person row brings at most 20 followers.
SELECT COUNT(*) FROM person p JOIN follows f ON f.dst = p.id WHERE p.name = 'news'

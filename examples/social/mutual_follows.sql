-- A self-join: ordered pairs that follow each other.
-- One follows row can complete a mutual pair on either side of the join: 2 (tight).
SELECT COUNT(*) FROM follows a JOIN follows b ON a.src = b.dst AND a.dst = b.src

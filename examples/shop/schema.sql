-- A small shop: each order belongs to one user, each item to one order.
CREATE TABLE users (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL,
    country TEXT
);
CREATE TABLE products (
    pid   INTEGER PRIMARY KEY,
    price INTEGER NOT NULL CHECK (price BETWEEN 0 AND 1000)
);
CREATE TABLE orders (
    oid   INTEGER PRIMARY KEY,
    uid   INTEGER NOT NULL REFERENCES users(id),
    total INTEGER NOT NULL CHECK (total BETWEEN 0 AND 500)
);
CREATE TABLE items (
    iid   INTEGER PRIMARY KEY,
    oid   INTEGER NOT NULL,
    pid   INTEGER NOT NULL REFERENCES products(pid),
    FOREIGN KEY (oid) REFERENCES orders(oid)
);

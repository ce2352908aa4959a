-- TPC-H (https://www.tpc.org/tpch/) with the specification's foreign keys: the schema of its standard
-- privacy configuration (cqsens.toml beside this file: one person is a customer with their orders and
-- lines; nation, region, part, supplier and partsupp are public).  Keys and value ranges as in
-- queries/schema.sql; every foreign-key column NOT NULL, as the specification's data are.
CREATE TABLE region   (r_regionkey INTEGER PRIMARY KEY, r_name TEXT, r_comment TEXT);
CREATE TABLE nation   (n_nationkey INTEGER PRIMARY KEY, n_name TEXT, n_regionkey INTEGER NOT NULL REFERENCES region(r_regionkey), n_comment TEXT);
CREATE TABLE supplier (s_suppkey INTEGER PRIMARY KEY, s_name TEXT, s_address TEXT, s_nationkey INTEGER NOT NULL REFERENCES nation(n_nationkey),
                       s_phone TEXT, s_acctbal DECIMAL(15,2) CHECK (s_acctbal BETWEEN -999.99 AND 9999.99),
                       s_comment TEXT);
CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name TEXT, c_address TEXT, c_nationkey INTEGER NOT NULL REFERENCES nation(n_nationkey),
                       c_phone TEXT, c_acctbal DECIMAL(15,2) CHECK (c_acctbal BETWEEN -999.99 AND 9999.99),
                       c_mktsegment TEXT, c_comment TEXT);
CREATE TABLE orders   (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER NOT NULL REFERENCES customer(c_custkey), o_orderstatus TEXT,
                       o_totalprice DECIMAL(15,2) CHECK (o_totalprice BETWEEN 0 AND 600000),
                       o_orderdate DATE, o_orderpriority TEXT, o_clerk TEXT, o_shippriority INTEGER,
                       o_comment TEXT);
CREATE TABLE lineitem (l_orderkey INTEGER NOT NULL REFERENCES orders(o_orderkey),
                       l_partkey INTEGER NOT NULL REFERENCES part(p_partkey),
                       l_suppkey INTEGER NOT NULL REFERENCES supplier(s_suppkey), l_linenumber INTEGER,
                       l_quantity DECIMAL(15,2) CHECK (l_quantity BETWEEN 1 AND 50),
                       l_extendedprice DECIMAL(15,2) CHECK (l_extendedprice BETWEEN 0 AND 105000),
                       l_discount DECIMAL(15,2) CHECK (l_discount BETWEEN 0 AND 0.10),
                       l_tax DECIMAL(15,2) CHECK (l_tax BETWEEN 0 AND 0.08),
                       l_returnflag TEXT, l_linestatus TEXT, l_shipdate DATE,
                       l_commitdate DATE, l_receiptdate DATE, l_shipinstruct TEXT, l_shipmode TEXT,
                       l_comment TEXT,
                       PRIMARY KEY (l_orderkey, l_linenumber),
                       FOREIGN KEY (l_partkey, l_suppkey) REFERENCES partsupp (ps_partkey, ps_suppkey));
CREATE TABLE part     (p_partkey INTEGER PRIMARY KEY, p_name TEXT, p_mfgr TEXT, p_brand TEXT, p_type TEXT,
                       p_size INTEGER CHECK (p_size BETWEEN 1 AND 50), p_container TEXT,
                       p_retailprice DECIMAL(15,2) CHECK (p_retailprice BETWEEN 900 AND 2100),
                       p_comment TEXT);
CREATE TABLE partsupp (ps_partkey INTEGER NOT NULL REFERENCES part(p_partkey),
                       ps_suppkey INTEGER NOT NULL REFERENCES supplier(s_suppkey),
                       ps_availqty INTEGER CHECK (ps_availqty BETWEEN 1 AND 9999),
                       ps_supplycost DECIMAL(15,2) CHECK (ps_supplycost BETWEEN 1 AND 1000),
                       ps_comment TEXT,
                       PRIMARY KEY (ps_partkey, ps_suppkey));

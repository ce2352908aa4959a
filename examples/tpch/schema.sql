-- TPC-H (https://www.tpc.org/tpch/), the tables used by the example queries.
CREATE TABLE region   (r_regionkey INTEGER PRIMARY KEY, r_name TEXT, r_comment TEXT);
CREATE TABLE nation   (n_nationkey INTEGER PRIMARY KEY, n_name TEXT, n_regionkey INTEGER, n_comment TEXT);
CREATE TABLE supplier (s_suppkey INTEGER PRIMARY KEY, s_name TEXT, s_address TEXT, s_nationkey INTEGER,
                       s_phone TEXT, s_acctbal DECIMAL(15,2), s_comment TEXT);
CREATE TABLE customer (c_custkey INTEGER PRIMARY KEY, c_name TEXT, c_address TEXT, c_nationkey INTEGER,
                       c_phone TEXT, c_acctbal DECIMAL(15,2) CHECK (c_acctbal BETWEEN -999.99 AND 9999.99),
                       c_mktsegment TEXT, c_comment TEXT);
CREATE TABLE orders   (o_orderkey INTEGER PRIMARY KEY, o_custkey INTEGER, o_orderstatus TEXT,
                       o_totalprice DECIMAL(15,2) CHECK (o_totalprice BETWEEN 0 AND 600000),
                       o_orderdate DATE, o_orderpriority TEXT, o_clerk TEXT, o_shippriority INTEGER,
                       o_comment TEXT);
CREATE TABLE lineitem (l_orderkey INTEGER, l_partkey INTEGER, l_suppkey INTEGER, l_linenumber INTEGER,
                       l_quantity DECIMAL(15,2) CHECK (l_quantity BETWEEN 1 AND 50),
                       l_extendedprice DECIMAL(15,2), l_discount DECIMAL(15,2), l_tax DECIMAL(15,2),
                       l_returnflag TEXT, l_linestatus TEXT, l_shipdate DATE,
                       PRIMARY KEY (l_orderkey, l_linenumber));

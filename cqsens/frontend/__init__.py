"""Front ends: SQL, CQ, dependency and DDL text in, IR values out.

The only package that imports sqlglot or lark: their objects never leave it.
"""

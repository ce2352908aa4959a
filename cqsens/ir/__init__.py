"""The intermediate representation: terms, atoms, CQs, expressions, dependencies, schemas.

Every value here is frozen and hashes; no module of this package imports sqlglot or lark.
"""

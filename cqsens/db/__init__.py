"""Live databases: connect (with masked secrets), reflect a schema, check constraints, profile fan-outs."""

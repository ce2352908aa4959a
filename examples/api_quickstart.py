"""cqsens from Python
===================

Analyse the paper's running example (Example 2) under three sets of
constraints, print the bounds and the proof behind the lower bound, and
calibrate Laplace noise.  Run from the project's root:

    python examples/api_quickstart.py
"""

from __future__ import annotations

from pathlib import Path

import cqsens

HERE = Path(__file__).resolve().parent / "hospital"


def main() -> None:
    for label, deps in [
        ("no constraints (Example 2)", {}),
        ("one doctor per patient (Example 15)", {"fds": ["PatDoc[pat->doc]"]}),
        ("at most 3 doctors per patient (Example 18)", {"cds": ["PatDoc[pat->doc]<=3"]}),
    ]:
        r = cqsens.analyze(HERE / "oncology.sql", schema=HERE / "schema.sql", epsilon=1.0, **deps)
        d = r.to_dict()
        print(f"{label}: upper {d['sensitivity']['upper']}, lower {d['sensitivity']['lower']}, "
              f"tight {d['sensitivity']['tight']}, Laplace scale {d['noise']['laplace_scale']}")
        if r.witness is not None:
            print("   proof:", r.witness.summary())
        for line in r.suggestion[:1]:
            print("   advice:", line)


if __name__ == "__main__":
    main()

"""The sensitivity engine: homomorphisms, chase, core, Gaifman graph, paths and the count bounds.

Every rule the engine applies is stated and proved in docs/rules.md.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries. ICALP 2016.
"""

from __future__ import annotations

__all__: list[str] = []

"""The sensitivity engine: homomorphisms, chase, core, Gaifman graph, paths and the count bounds.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries. ICALP 2016.
"""

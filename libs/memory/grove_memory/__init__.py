"""Grove's transactional memory service: every operation on notes, one function each.

The kernel (the store, errors, visibility, cursors, operation records, rows, the grove-ask
client) sits at the root; the operations live in area packages over it (notes, search,
ask, files, enrichment, portability, orgs), each importing only the kernel and the areas
``tests/unit/test_memory_areas.py`` allows it (docs/architecture.md: grove_memory's rooms).
"""

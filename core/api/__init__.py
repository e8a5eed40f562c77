"""The contract between the core and its plugins: hook specifications, the records that cross hook boundaries, samples,
errors, seeding, the backend protocol and the arena contract. Nothing here imports the rest of arena; ``arena.core``
re-exports it.
"""

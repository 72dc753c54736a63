"""A memory: record (behind the write gate and the duplicate checks), get, list, edit, lineage, re-embed."""

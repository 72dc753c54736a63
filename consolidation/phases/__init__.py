"""The phases of one consolidation run, one module each (DESIGN §10); ``consolidation/runs.py`` runs them in order."""

"""Events of the consolidation cycle, as Django signals (``consolidation/receivers.py`` logs and counts them)."""

from django.dispatch import Signal

run_completed = Signal()  # kwargs: run
pattern_extracted = Signal()  # kwargs: run, memory, source_count
contradiction_detected = Signal()  # kwargs: run, contradictions (list of dicts)

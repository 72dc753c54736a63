"""Events of the consolidation cycle (seed 004's MediatR notifications as Django signals)."""

from django.dispatch import Signal

run_completed = Signal()  # kwargs: run
pattern_extracted = Signal()  # kwargs: run, memory, source_count
contradiction_detected = Signal()  # kwargs: run, contradictions (list of dicts)

from django.apps import AppConfig


class ConsolidationConfig(AppConfig):
    name = "consolidation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from consolidation.phases import phases_discover
        from consolidation.prompts import examples
        from reasoningbank.ai.prompt_kinds import prompt_kind_register
        from reasoningbank.ai.purposes import purpose_register

        # what the run's phases call an LLM for (LlmCall.purpose, the usage page, the LLM metrics' label)
        purpose_register("synthesize", "Synthesize cluster")
        purpose_register("judge", "Contradiction judge")
        purpose_register("supersede", "Supersession check")
        purpose_register("patterns", "Pattern extraction")
        purpose_register("summarize", "Summarize cluster")
        # an example of each prompt, for the provider check (manage.py llm_check, the system page)
        prompt_kind_register("synthesize", purpose="synthesize", example=examples.synthesis_example)
        prompt_kind_register("synthesize_batch", purpose="synthesize", example=examples.synthesis_batch_example)
        prompt_kind_register("supersede", purpose="supersede", example=examples.supersession_example)
        prompt_kind_register("judge", purpose="judge", example=examples.contradiction_example)
        prompt_kind_register("judge_batch", purpose="judge", example=examples.judge_batch_example)
        prompt_kind_register("patterns", purpose="patterns", example=examples.pattern_example)
        prompt_kind_register("summarize", purpose="summarize", example=examples.summary_example)

        # first: a run's counters, the metrics and every page read the phases from the registry
        phases_discover()

        from consolidation.runs import run_enqueue
        from consolidation.selectors import runs_running, runs_waiting
        from reasoningbank.fair_share import SlowWork, slow_work_register

        # a run is slow work: each organization gets its share of the worker for it (with its sessions)
        task = "consolidation.tasks.consolidation_run_task"
        slow_work_register(SlowWork("consolidation_run", runs_running, runs_waiting, task, run_enqueue))

        from consolidation import events, receivers
        from memories.events import memories_added

        memories_added.connect(receivers.on_memories_added, dispatch_uid="consolidation.on_demand")
        events.run_completed.connect(receivers.on_run_completed, dispatch_uid="consolidation.log_run")
        events.pattern_extracted.connect(receivers.on_pattern_extracted, dispatch_uid="consolidation.log_pattern")
        events.contradiction_detected.connect(
            receivers.on_contradiction_detected, dispatch_uid="consolidation.log_contradiction"
        )
        post_spawn.connect(receivers.on_worker_spawned, dispatch_uid="consolidation.sweep_at_worker_start")

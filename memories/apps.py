from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts.plans.catalogue import usage_counter_register
        from memories.code.services_seed import history_distilled_receiver
        from memories.core.selectors import memories_active_count
        from memories.events import session_memories_distilled
        from memories.prompt_examples import distill_example, reason_example, search_rewrite_example
        from memories.sessions.selectors import sessions_running, sessions_waiting
        from memories.sessions.services import session_enqueue
        from reasoningbank.ai.prompt_kinds import prompt_kind_register
        from reasoningbank.ai.purposes import purpose_register
        from reasoningbank.fair_share import SlowWork, slow_work_register

        usage_counter_register("memories", memories_active_count)
        # what distillation draws from a repository's history is anchored to the commits it cites
        session_memories_distilled.connect(history_distilled_receiver, dispatch_uid="history_distilled_anchor")
        # a session's distillation is slow work: each organization gets its share of the worker for it
        distill = "memories.tasks.session_distill"
        slow_work_register(SlowWork("session", sessions_running, sessions_waiting, distill, session_enqueue))
        # what this app calls an LLM for (LlmCall.purpose, the usage page, the LLM metrics' label)
        purpose_register("distill", "Distill session")
        purpose_register("reason", "Reasoned answer (memory_ask)")
        purpose_register("search_rewrite", "Deep search question rewrite")
        # an example of each prompt, for the provider check (manage.py llm_check, the system page)
        prompt_kind_register("distill", purpose="distill", example=distill_example)
        prompt_kind_register("reason", purpose="reason", example=reason_example)
        prompt_kind_register("search_rewrite", purpose="search_rewrite", example=search_rewrite_example)

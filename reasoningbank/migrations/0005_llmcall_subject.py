# An LLM call names what it was made for with a generic reference (the model's label and its primary
# key) instead of foreign keys into the memories and consolidation apps: the kernel knows no app.
# Every existing call keeps its run or session as its subject; backwards, the foreign keys come back
# for the subjects that still exist.

from django.db import migrations, models

RUN, SESSION = "consolidation.consolidationrun", "memories.agentsession"

FORWARD = [
    f"UPDATE reasoningbank_llmcall SET subject_type = '{RUN}', subject_id = run_id WHERE run_id IS NOT NULL",
    f"UPDATE reasoningbank_llmcall SET subject_type = '{SESSION}', subject_id = session_id "
    "WHERE session_id IS NOT NULL AND run_id IS NULL",
]
BACKWARD = [
    f"UPDATE reasoningbank_llmcall c SET run_id = c.subject_id WHERE c.subject_type = '{RUN}' "
    "AND EXISTS (SELECT 1 FROM consolidation_consolidationrun r WHERE r.id = c.subject_id)",
    f"UPDATE reasoningbank_llmcall c SET session_id = c.subject_id WHERE c.subject_type = '{SESSION}' "
    "AND EXISTS (SELECT 1 FROM memories_agentsession s WHERE s.id = c.subject_id)",
]


class Migration(migrations.Migration):

    dependencies = [
        ('reasoningbank', '0004_llm_purposes_registered'),
    ]

    operations = [
        migrations.AddField(
            model_name='llmcall',
            name='subject_type',
            field=models.CharField(blank=True, max_length=100, default=''),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name='llmcall',
            name='subject_id',
            field=models.CharField(blank=True, max_length=64, default=''),
            preserve_default=False,
        ),
        migrations.RunSQL(FORWARD, reverse_sql=BACKWARD),
        migrations.RemoveField(
            model_name='llmcall',
            name='run',
        ),
        migrations.RemoveField(
            model_name='llmcall',
            name='session',
        ),
        migrations.AddIndex(
            model_name='llmcall',
            index=models.Index(fields=['subject_type', 'subject_id'], name='llmcall_subject'),
        ),
    ]

# The LLM purposes are a registry the apps fill (reasoningbank/ai/purposes.py), validated in Python:
# the field keeps no choices, so a new purpose needs no migration. The stored values do not change.

import reasoningbank.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('reasoningbank', '0003_llm_purposes_summarize_reason'),
    ]

    operations = [
        migrations.AlterField(
            model_name='llmcall',
            name='purpose',
            field=models.CharField(max_length=20, validators=[reasoningbank.models.purpose_validate]),
        ),
    ]

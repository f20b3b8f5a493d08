"""Add the letters Kontor sends its customers (lab 7 counts them)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("books", "0002_reference_data")]
    operations = [
        migrations.CreateModel(
            name="Letter",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("subject", models.CharField(max_length=200)),
                ("body", models.TextField()),
                ("sent_at", models.DateTimeField(auto_now_add=True)),
                ("bulk_upload", models.ForeignKey(blank=True, null=True,
                                                  on_delete=django.db.models.deletion.CASCADE,
                                                  related_name="letters", to="books.bulkupload")),
                ("company", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to="books.company")),
            ],
        ),
    ]

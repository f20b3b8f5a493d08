"""Load the shipped chart-of-accounts leaves and currencies."""

from django.db import migrations

from kontor.reference_data import CATEGORY_ROWS, CURRENCY_ROWS


def load(apps, schema_editor):
    apps.get_model("books", "Category").objects.bulk_create(
        apps.get_model("books", "Category")(**row) for row in CATEGORY_ROWS)
    apps.get_model("books", "Currency").objects.bulk_create(
        apps.get_model("books", "Currency")(**row) for row in CURRENCY_ROWS)


def unload(apps, schema_editor):
    apps.get_model("books", "Category").objects.all().delete()
    apps.get_model("books", "Currency").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("books", "0001_initial")]
    operations = [migrations.RunPython(load, unload)]

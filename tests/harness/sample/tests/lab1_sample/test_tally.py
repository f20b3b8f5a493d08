"""Hidden checks of the sample lab, run on a real worker."""

from kontor.books.models import Company


def test_tally_counts_negative_numbers(start_worker, celery_client, queue_name):
    """The tally of a mixed list includes its negative numbers."""
    start_worker([queue_name], ["lab1_sample.tally"])
    result = celery_client.send_task("sample.tally", args=[[5, -2, 3]], queue=queue_name)
    value = result.get(timeout=10)
    assert value == 6, f"the tally of [5, -2, 3] came back {value}"


def test_check_database_is_fresh(kontor_db):
    """Each check starts from the seeded data."""
    Company.objects.create(name="Scratch GmbH")
    assert Company.objects.filter(name="Scratch GmbH").count() == 1, "a check saw another check's rows"

"""The generator makes the same world from the same seed."""

from kontor import datagen


def test_same_seed_same_data():
    """Two runs with one seed give identical CSVs, documents and invoices."""
    assert datagen.import_csv(7, 200, 5) == datagen.import_csv(7, 200, 5)
    assert datagen.documents(7, 20) == datagen.documents(7, 20)
    assert datagen.invoices(7, 30, 5, {1: "bad-email"}) == datagen.invoices(7, 30, 5, {1: "bad-email"})


def test_other_seed_other_data():
    """A different seed changes the data."""
    assert datagen.import_csv(7, 50)[0] != datagen.import_csv(8, 50)[0]


def test_csv_marks_its_malformed_rows():
    """The CSV has the requested number of malformed rows, and says which."""
    text, bad = datagen.import_csv(7, 100, 6)
    rows = text.splitlines()[1:]
    assert len(rows) == 100 and len(bad) == 6
    for number in bad:
        booked, amount, currency, *_ = rows[number - 1].split(";")
        assert booked == "31.02.2026" or amount == "12,3,4" or currency == "XXX"


def test_due_invoices_come_in_sweep_order_with_poison_where_asked():
    """Due invoices have rising due dates and poison at the requested positions."""
    specs = datagen.invoices(7, 20, 3, {1: "bad-email", 5: "fee-over-amount"})
    due = [s for s in specs if s.due_on < datagen.TODAY]
    assert len(due) == 20
    assert [s.due_on for s in due] == sorted(s.due_on for s in due)
    assert "@" not in due[1].customer_email and due[5].amount < 1


def test_bulk_upload_is_capped_at_95_files():
    """A document batch holds at most 95 files."""
    assert len(datagen.document_batch(7, 95)) == 95
    try:
        datagen.document_batch(7, 96)
    except ValueError as exc:
        assert "95" in str(exc)
    else:
        raise AssertionError("a batch of 96 files was accepted")

"""A deterministic generator of Kontor's data and the labs' inputs, driven by a seed.

The same seed always gives the same companies, transactions, documents,
invoices, CSV uploads and document batches, so a grader, a live run and a
learner's notebook all see the same world.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass
from decimal import Decimal

from kontor.reference_data import CATEGORIES, CURRENCY_ROWS

# The workshop's "today": fixed, so which invoices are due never depends on the date.
TODAY = datetime.date(2026, 3, 31)

COMPANIES = ["Bäckerei Hoffmann", "Elektro Yilmaz GmbH", "Praxis Dr. Wagner", "Studio Nord UG", "Weingut Kessler"]
COUNTERPARTIES = ["Stadtwerke Köln", "Telekom", "Deutsche Post", "Büro Schmidt", "Hotel Adler", "Tankstelle Ost",
                  "Kanzlei Brandt", "IHK München", "Allianz", "Metro", "Lieferando", "DB Fernverkehr"]
CSV_HEADER = "booked_on;amount;currency;counterparty;purpose"


@dataclass(frozen=True)
class InvoiceSpec:
    """An invoice to create; `poison` says how (if at all) it breaks a sweep."""

    number: str
    customer: str
    customer_email: str
    amount: Decimal
    currency: str
    issued_on: datetime.date
    due_on: datetime.date
    poison: str | None  # None, "bad-email" (raises in Python) or "fee-over-amount" (fails in PostgreSQL)


def _amount(rng: random.Random, low: float = 5, high: float = 2500) -> Decimal:
    return Decimal(f"{rng.uniform(low, high):.2f}")


def _purpose(rng: random.Random) -> str:
    code, name, _group, _rate, words = rng.choice(CATEGORIES)
    return f"{rng.choice(words.split())} {rng.randint(1000, 9999)}"


def transactions(seed: int, count: int) -> list[dict]:
    """Return bank transactions as field dicts (currency as a code)."""
    rng = random.Random(f"{seed}:transactions")
    codes = [row["code"] for row in CURRENCY_ROWS]
    return [{
        "booked_on": TODAY - datetime.timedelta(days=rng.randint(0, 365)),
        "amount": _amount(rng) * rng.choice([1, -1]),
        "currency": rng.choices(codes, weights=[80, 6, 4, 4, 2, 2, 1, 1])[0],
        "counterparty": rng.choice(COUNTERPARTIES),
        "purpose": _purpose(rng),
    } for _ in range(count)]


def documents(seed: int, count: int) -> list[dict]:
    """Return uploaded documents (receipts) as {'filename', 'content'} dicts."""
    rng = random.Random(f"{seed}:documents")
    files = []
    for index in range(count):
        vendor = rng.choice(COUNTERPARTIES)
        lines = [vendor, f"Rechnung Nr. {rng.randint(10000, 99999)}", _purpose(rng),
                 f"Summe {_amount(rng)} EUR", f"USt {rng.choice(['19', '7'])} %"]
        files.append({"filename": f"beleg-{index + 1:03d}.txt", "content": "\n".join(lines)})
    return files


def document_batch(seed: int, size: int) -> list[dict]:
    """Return one bulk upload: at most 95 files, the product's limit."""
    if not 1 <= size <= 95:
        raise ValueError(f"a bulk upload holds 1 to 95 files, not {size}")
    return documents(seed, size)


def import_csv(seed: int, rows: int, malformed: int = 0) -> tuple[str, list[int]]:
    """Return a semicolon CSV of bank rows and the 1-based numbers of its malformed rows.

    Malformed rows have a broken date, amount or currency, the kinds of
    mistakes a bank export or a hand-edited file makes.
    """
    rng = random.Random(f"{seed}:csv")
    bad = sorted(rng.sample(range(1, rows + 1), malformed)) if malformed else []
    lines = [CSV_HEADER]
    for number, row in enumerate(transactions(seed, rows), start=1):
        booked = row["booked_on"].isoformat()
        amount = f"{row['amount']}".replace(".", ",")
        currency = row["currency"]
        if number in bad:
            kind = rng.choice(["date", "amount", "currency"])
            booked = "31.02.2026" if kind == "date" else booked
            amount = "12,3,4" if kind == "amount" else amount
            currency = "XXX" if kind == "currency" else currency
        lines.append(";".join([booked, amount, currency, row["counterparty"], row["purpose"]]))
    return "\n".join(lines) + "\n", bad


def invoices(seed: int, due: int, not_due: int, poison_positions: dict[int, str]) -> list[InvoiceSpec]:
    """Return invoices: `due` past their due date (oldest first) and `not_due` still open.

    poison_positions maps a 0-based position among the due invoices to a
    poison kind; position 1 is near the start, as in the story.
    """
    rng = random.Random(f"{seed}:invoices")
    specs = []
    for index in range(due + not_due):
        is_due = index < due
        # Due invoices get strictly increasing due dates, so sweep order equals position.
        due_on = (TODAY - datetime.timedelta(days=due - index) if is_due
                  else TODAY + datetime.timedelta(days=rng.randint(1, 60)))
        poison = poison_positions.get(index) if is_due else None
        customer = rng.choice(COMPANIES)
        email = f"buchhaltung@{customer.split()[0].lower()}.example"
        amount = _amount(rng, 40, 4000)
        if poison == "bad-email":
            email = "buchhaltung at " + customer.split()[0].lower()
        elif poison == "fee-over-amount":
            amount = Decimal("0.50")
        specs.append(InvoiceSpec(f"RE-2026-{index + 1:04d}", customer, email, amount, "EUR",
                                 due_on - datetime.timedelta(days=30), due_on, poison))
    return specs

"""Kontor's tables: reference data, bookkeeping records, the three kinds of batch job and the letters sent."""

from __future__ import annotations

from decimal import Decimal

from django.db import models


class Company(models.Model):
    """A small business whose books Kontor keeps."""

    name = models.CharField(max_length=200)
    vat_id = models.CharField(max_length=20, blank=True)

    def __str__(self) -> str:
        return self.name


class Category(models.Model):
    """A leaf of the chart of accounts: static reference data, changed only by migrations."""

    code = models.CharField(max_length=8, unique=True)
    name = models.CharField(max_length=120)
    group = models.CharField(max_length=60)
    vat_rate = models.DecimalField(max_digits=4, decimal_places=2)
    keywords = models.CharField(max_length=300, help_text="Space-separated words that suggest this category.")

    class Meta:
        ordering = ["code"]
        verbose_name_plural = "categories"

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class Currency(models.Model):
    """A currency with its reference rate to the euro."""

    code = models.CharField(max_length=3, unique=True)
    name = models.CharField(max_length=60)
    rate_to_eur = models.DecimalField(max_digits=12, decimal_places=6)

    class Meta:
        ordering = ["code"]
        verbose_name_plural = "currencies"

    def __str__(self) -> str:
        return self.code


class Document(models.Model):
    """An uploaded receipt or invoice, with the text OCR read from it."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    filename = models.CharField(max_length=200)
    content = models.TextField(help_text="The file's text as uploaded (the workshop uses text files).")
    ocr_text = models.TextField(blank=True)
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL)
    bulk_upload = models.ForeignKey("BulkUpload", null=True, blank=True, on_delete=models.CASCADE,
                                    related_name="documents")
    created_at = models.DateTimeField(auto_now_add=True)


class Transaction(models.Model):
    """A booked bank transaction."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    booked_on = models.DateField()
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.ForeignKey(Currency, on_delete=models.PROTECT)
    counterparty = models.CharField(max_length=200)
    purpose = models.CharField(max_length=300, blank=True)
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL)
    import_job = models.ForeignKey("ImportJob", null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="transactions")


class Invoice(models.Model):
    """An outgoing invoice that Kontor's sweeps watch for payment."""

    class Status(models.TextChoices):
        OPEN = "open"
        OVERDUE = "overdue"
        PAID = "paid"

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    number = models.CharField(max_length=40)
    customer = models.CharField(max_length=200)
    customer_email = models.CharField(max_length=200, blank=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.ForeignKey(Currency, on_delete=models.PROTECT)
    issued_on = models.DateField()
    due_on = models.DateField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    reminder_level = models.PositiveSmallIntegerField(default=0)
    reminder_fee = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal("0"))
    amount_eur = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)

    class Meta:
        constraints = [
            # A reminder fee larger than the invoice is a bookkeeping error the database refuses.
            models.CheckConstraint(condition=models.Q(reminder_fee__lte=models.F("amount")),
                                   name="invoice_fee_within_amount"),
        ]


class BatchJob(models.Model):
    """What the three kinds of batch job share: a status, counts, failures and a final message.

    Subclasses name their own states; a job is *final* once it is completed
    or failed, and only a final job is something a person can act on.
    """

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    items_total = models.PositiveIntegerField(default=0)
    items_done = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_final(self) -> bool:
        return self.status in (self.COMPLETED, self.FAILED)


class ImportJob(BatchJob):
    """A CSV upload of bank transactions; each good row becomes a Transaction."""

    RUNNING = "importing"

    class Status(models.TextChoices):
        PENDING = "pending"
        IMPORTING = "importing"
        COMPLETED = "completed"
        FAILED = "failed"

    filename = models.CharField(max_length=200)
    csv_text = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)


class BulkUpload(BatchJob):
    """Up to 95 files uploaded at once; each is read by OCR and categorised by the model."""

    RUNNING = "processing"

    class Status(models.TextChoices):
        PROCESSING = "processing"
        COMPLETED = "completed"
        FAILED = "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROCESSING)
    files = models.JSONField(default=list, help_text="[{'filename': ..., 'content': ...}, ...]")


class AgentRun(BatchJob):
    """An agent working through a list of steps, each a model call."""

    RUNNING = "running"
    COMPLETED = "succeeded"

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    goal = models.CharField(max_length=300)
    steps = models.JSONField(default=list, help_text="The instructions the agent works through.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)


class AgentStep(models.Model):
    """One finished step of an agent run."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="results")
    index = models.PositiveIntegerField()
    output = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="agent_step_once")]


class Letter(models.Model):
    """A letter Kontor sent a customer, such as the note that an upload's receipts are booked.

    A letter that went out cannot be taken back: two rows for one upload
    mean the customer got two letters.
    """

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    bulk_upload = models.ForeignKey(BulkUpload, null=True, blank=True, on_delete=models.CASCADE,
                                    related_name="letters")
    subject = models.CharField(max_length=200)
    body = models.TextField()
    sent_at = models.DateTimeField(auto_now_add=True)

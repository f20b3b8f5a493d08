"""Kontor's bookkeeping domain: companies, documents, transactions, invoices and batch jobs."""

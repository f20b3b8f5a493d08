"""Kontor: the fictional bookkeeping and tax service whose background jobs the labs repair."""

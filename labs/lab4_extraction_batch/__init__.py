"""Lab 4: the category table that every document and transaction reads again."""

"""App configuration; connects the cache-invalidation receivers at start-up."""

from django.apps import AppConfig


class BooksConfig(AppConfig):
    name = "kontor.books"
    label = "books"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from kontor.books import signals  # noqa: F401  (connects receivers)

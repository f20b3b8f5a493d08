"""The room board's URLs: the page, the learner API, the facilitator's API and exports."""

from django.urls import path, re_path

from budgetlab.board import views

urlpatterns = [
    path("", views.page),
    re_path(r"^join/(?P<token>[A-Za-z0-9_-]+)$", views.join_hint),
    path("static/<str:name>", views.static),
    path("api/room", views.room),
    path("api/results", views.results),
    path("api/state", views.state),
    path("api/close", views.close),
    re_path(r"^export\.(?P<fmt>csv|json)$", views.export),
]

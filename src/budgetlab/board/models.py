"""The room board's tables: a room, its learners, every posted result, and each learner's standing per lab."""

from __future__ import annotations

from django.db import models


class Room(models.Model):
    """One workshop session; learners post with its token, the facilitator opens the page with its key."""

    #: What learners put in their join command; it lets a result in, nothing more.
    token = models.CharField(max_length=64, unique=True)
    #: What the facilitator's page link carries; it shows the board, exports it and closes the room.
    key = models.CharField(max_length=64, unique=True)
    opened_at = models.DateTimeField(auto_now_add=True)
    #: Set when the facilitator closes the room; from then on posts are refused.
    closed_at = models.DateTimeField(null=True, blank=True)


class Learner(models.Model):
    """A learner's machine as it joined: a random id of its own and the name it chose."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="learners")
    learner = models.CharField(max_length=32)
    name = models.CharField(max_length=64)
    #: The lab of the latest result: a learner is stuck only where they are working now.
    last_lab = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "learner"], name="one_learner_per_id")]


class Post(models.Model):
    """One result as it arrived, kept so the room's history can be checked and exported."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="posts")
    #: Chosen by the learner's machine; a post sent twice is stored once.
    post_id = models.CharField(max_length=32, unique=True)
    learner = models.CharField(max_length=32)
    lab = models.PositiveSmallIntegerField()
    received_at = models.FloatField()
    body = models.JSONField()


class Standing(models.Model):
    """Where one learner stands on one lab, folded by budgetlab.board.standing from their posts."""

    room = models.ForeignKey(Room, on_delete=models.CASCADE, related_name="standings")
    learner = models.CharField(max_length=32)
    lab = models.PositiveSmallIntegerField()
    state = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["room", "learner", "lab"], name="one_standing_per_lab")]

"""Kontor's Celery settings for the bulk-upload workers.

Kontor runs its bulk jobs with acks_late, so that a job whose worker dies
(a deploy, an out-of-memory kill, a lost machine) is delivered again and
finished by another worker. Since lab 1 raised the bulk upload's budget
to two hours, some uploads are delivered a second time while the first
run is still working, and customers get their receipts booked twice and
two letters.

Goal: a job still runs on another worker when its worker dies, but no
job is handed out again while its first run is alive and within its
budget.
"""

from kontor.celeryconfig import *  # noqa: F403  (broker, JSON only, the prefork pool)

# A message is acknowledged only after its task returned, so a job whose worker
# dies mid-way is not lost: the broker delivers it again.
task_acks_late = True

# Redis has no acknowledgements of its own: kombu hands an unacknowledged message to
# another worker once it is older than this, whether or not its first worker still
# runs it (3600 s when unset). It must sit above the longest hard limit a task here
# has, the bulk upload's 7200 s, or every long upload runs twice. Three hours leaves
# an hour for a message that waited in a worker's buffer before its task began, and
# a job whose worker died is picked up again within three hours, not days.
# preflight.py refuses to start a worker when a budget reaches it.
broker_transport_options = {"visibility_timeout": 10800}

#!/usr/bin/env bash
# Kontor's worker container: one Celery master per queue, until one of them stops.
#
# Half of Kontor's tasks choose their own time limits in the decorator. The
# other half choose none. This week a 40-file bulk OCR job on `documents`
# and the reminder sweep on `sweeps` were both stopped after 120 s, and
# nobody remembers choosing that number.
#
# Goal (this file and settings.py):
# - On imports, documents and sweeps, a task without limits of its own gets
#   the budget of settings.py: 600 s soft and 900 s hard unless a deployment
#   sets KONTOR_TASK_SOFT_TIME_LIMIT and KONTOR_TASK_TIME_LIMIT; change
#   those numbers in settings.py and the three queues' budget changes too.
# - A task's own decorator limits still win, on every queue.
# - The two agent queues keep budgets of their own, chosen here on purpose:
#   agent-batch at least 1800 s soft; agent-interactive, where a person
#   waits, at most 60 s soft.
# - On every queue the hard limit comes later than the soft one.
# - Every budget, here and in settings.py, has a comment next to it that
#   says why it is that number.
set -eu

export KONTOR_CELERY_SETTINGS=lab1_worker_container.settings
# Celery from the workshop's interpreter (budgetlab passes PYTHON); in production, celery on PATH.
celery() { "${PYTHON:-python}" -m celery "$@"; }
# One name per master and run, so that replies from two runs never mix (budgetlab passes KONTOR_WORKER_NAME).
name="${KONTOR_WORKER_NAME:-kontor}"
# One child per master, quick start-up; none of these options changes a time limit.
common="--concurrency 1 -l INFO --without-mingle --without-gossip --without-heartbeat"

# The fix: the transactional queues carry no time-limit flag, so the budget
# in settings.py applies to them (the ${SOFT_TIME_LIMIT:-120} fallback beat
# it on Celery 5.6). Only the agent queues set budgets here, on purpose.
celery -A kontor.celery_app worker -Q imports -n "imports@$name" $common &
celery -A kontor.celery_app worker -Q documents -n "documents@$name" $common &
celery -A kontor.celery_app worker -Q sweeps -n "sweeps@$name" $common &

# Each agent budget is given twice: as flags, which Celery 5.6 applies, and
# as this master's settings, which Celery 5.7 binds into every task and lets
# beat any flag. So both versions agree, and so does `celery inspect stats`.
# (On 5.7 a message can also carry its producer's settings, which beat both;
# docs/labs/lab1.md says what that means for per-queue budgets.)

# agent-batch: an agent works through up to 95 documents with a model call
# each, about nine minutes at the median latency and far more in the tail:
# 30 minutes soft, then 5 minutes to record how far it got.
KONTOR_TASK_SOFT_TIME_LIMIT=1800 KONTOR_TASK_TIME_LIMIT=2100 \
    celery -A kontor.celery_app worker -Q agent-batch -n "agent-batch@$name" $common \
    --soft-time-limit 1800 --time-limit 2100 &
# agent-interactive: a person waits for the answer; after 45 s a clear
# "try again" is better than a spinner, and 15 s later the child is killed.
KONTOR_TASK_SOFT_TIME_LIMIT=45 KONTOR_TASK_TIME_LIMIT=60 \
    celery -A kontor.celery_app worker -Q agent-interactive -n "agent-interactive@$name" $common \
    --soft-time-limit 45 --time-limit 60 &

# The container lives as long as all five masters do.
wait -n

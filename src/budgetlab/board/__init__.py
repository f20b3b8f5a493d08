"""The live room board: a small Django app on the facilitator's machine that learners' checks post to.

Only `budgetlab facilitate` (server.py) configures Django with this
package's own settings; the learner's side (client.py) and the wire format
(payload.py) are plain standard library, so `check` never loads Django for it.
"""

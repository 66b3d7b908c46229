"""``grove import-from``: move notes in from mem0, Markdown folders and chat transcripts.

Each source has a module that turns its file(s) into a ``Plan`` of ``POST /v1/memories``
bodies (``mem0``, ``markdown``, ``transcript``); ``sender`` posts them through the public
API, so grants, quotas and limits hold as for any client.
"""

"""Adapters of ``Grove`` to agent frameworks, each behind an optional extra.

``grove_client.integrations.langgraph`` (``pip install 'grove-client[langgraph]'``) and
``grove_client.integrations.llamaindex`` (``[llamaindex]``) import their framework when
they are imported; this package imports neither, so the client works without them.
"""

"""Adapters of ``Grove`` to agent frameworks, each behind an optional extra.

``grove_client.integrations.langgraph`` (``pip install 'grove-client[langgraph]'``),
``grove_client.integrations.langchain`` (``[langchain]``) and
``grove_client.integrations.llamaindex`` (``[llamaindex]``) import their framework when
they are imported; this package imports none, so the client works without them.
"""

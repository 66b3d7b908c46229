"""Notes on two topics (billing and deploys) and one unfiled note on billing: what
enrichment must group, name and file, in the worker's tests and in the browser."""

from __future__ import annotations

BILLING = [
    "Invoices for the Acme account are sent on the first business day of each month.",
    "Acme invoices go to accounts payable, not to the project manager.",
    "Late invoices for Acme get a reminder after fourteen days.",
]
DEPLOYS = [
    "Deploys to production need a green canary for thirty minutes.",
    "Production deploys are frozen on Fridays after noon.",
    "Rollback of a production deploy is one click in Argo CD.",
]
UNFILED = "Acme invoices: resend the March invoice to accounts payable."

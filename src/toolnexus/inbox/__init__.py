"""The approvals inbox (extra ``inbox``): a web page where people answer halted runs.

    from toolnexus.inbox import inbox_app
    app = inbox_app("sqlite:///state.db", users="users.json")    # an ASGI app

Over any run store, with no toolkit: answers are recorded in the store exactly once and a
worker (``client.worker(toolkit)`` / ``toolnexus worker``) resumes the run. See docs/inbox.md.
"""

from __future__ import annotations

from .app import InboxApp, inbox_app
from .auth import InboxUser, load_users
from .live import request_document

__all__ = ["InboxApp", "InboxUser", "inbox_app", "load_users", "request_document"]

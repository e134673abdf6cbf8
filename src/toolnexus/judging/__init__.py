"""The judgment seam: a classifier answers typed questions about a JSON state (COMPAT §10).

A "System One" model takes a *state* and questions declared in advance (a probability, a
choice among options, a score on an ordered scale) and answers with calibrated numbers, never
free text. It never enters the client loop and never authorises anything by itself; the judge
layer reads its answers against bands and rules, and the batteries wrap the common judgments
(a tool guard, relevance filters, routers, a content guard) with hooks for the loop.

    questions.py    the questions, their wire form, the canonical bytes, the limits
    answers.py      the answers, `Decision`, usage, and the strict decoder
    systemone.py    the HTTP backend: body, headers, retries, errors
    backends.py     the ``llm``, ``custom`` and ``static`` backends
    classifier.py   `Classifier`, `create_classifier`, metrics and warnings
    judge.py        bands, builders, `ask`, rules and policies, `gate`, `Tape`
    battery.py      what every battery shares: roles, ``on_error``, the latest user text
    guards.py · relevance.py · routers.py   the seven batteries

The public paths are `toolnexus.classifier`, `toolnexus.judge` and `toolnexus.judge_batteries`
(and the flat namespace); this package is their implementation.
"""

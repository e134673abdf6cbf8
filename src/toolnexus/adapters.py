"""``toolnexus.adapters``: tool declarations per provider, under the existing package's path.

A thin re-export: every name is the same object as ``toolnexus.<name>``.
"""

from ._toolkit import to_anthropic, to_gemini, to_openai

__all__ = ["to_anthropic", "to_gemini", "to_openai"]

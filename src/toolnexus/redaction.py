"""The secret registry: every secret the process was given, and the one step that masks them.

Secrets enter toolnexus in a few places — a client's API key (passed or read from the
environment), credential headers, the ``${ENV}`` references of an ``mcp.json`` (headers,
``env``, ``args``) and of `http_tool` headers. Each place registers what it got with a
`Redactor`; the client owns one, every toolkit owns one, and a run consults both. Text from
outside (a tool's result, an MCP server's error, a provider's error body) passes through
`Redactor.text` at the boundary where it enters, so the model, the logs, the run events, the
transcripts and the checkpoints only ever hold `MASK` in its place::

    secrets = Redactor()
    secrets.add("sk-live-1234")
    secrets.add_env("SEARCH_TOKEN")            # looked up when text is masked: rotation works
    secrets.text("bad key sk-live-1234")       # 'bad key ***'

Rules: a value shorter than `MIN_SECRET` characters is never registered (masking ``"a"``
would garble every text); exact occurrences are replaced, longest secret first; a value that
is registered under a credential-looking name (`is_secret_name`) counts whole and, for
``"<scheme> <credential>"`` values such as ``Bearer abc``, by its credential part too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, cast

from ._env import env_references
from ._types import ToolResult

__all__ = ["MASK", "MIN_SECRET", "Redactor", "is_secret_name"]

MASK = "***"
"""What every secret is replaced with."""
MIN_SECRET = 4
"""Values shorter than this many characters are not treated as secrets."""

_SECRET_NAME = re.compile(r"auth|token|key|secret|pass|cookie|credential|signature", re.I)


def is_secret_name(name: str) -> bool:
    """True for a header or variable name that carries a credential (``Authorization``,
    ``X-Api-Key``, ``GITHUB_TOKEN``, ``DB_PASSWORD``, ``Cookie``...).

    >>> is_secret_name("X-Api-Key"), is_secret_name("Accept")
    (True, False)
    """
    return _SECRET_NAME.search(name) is not None


_GENERATION = [0]
"""Bumped whenever any redactor learns a secret, an environment name or a link."""


def _env_keys(names: tuple[str, ...]) -> tuple[Any, ...]:
    """``names`` as keys of ``os.environ``'s own table (bytes on POSIX), or ``()`` when it has
    none we know how to read (see `_env_values`)."""
    encode = getattr(os.environ, "encodekey", None)
    if encode is None or type(getattr(os.environ, "_data", None)) is not dict:
        return ()
    try:
        return tuple(encode(name) for name in names)
    except (TypeError, ValueError, UnicodeError):
        return ()


def _env_values(names: tuple[str, ...], keys: tuple[Any, ...]) -> tuple[Any, ...]:
    """The current values of the environment variables ``names``, to compare only.

    Read on every masking, so that a secret set or rotated later is masked. ``os.environ.get``
    costs about 2 µs for a name that is not set (it raises and catches a `KeyError`), and
    most of the provider-key names are not set; CPython's ``os.environ`` keeps its values in
    a plain dict (``_data``), read here directly, in its raw (encoded) form. Anything else
    — another implementation, an ``os.environ`` replaced by a test — is read the public way.
    """
    if keys:
        data: object = getattr(os.environ, "_data", None)
        if type(data) is dict:
            table = cast(dict[Any, Any], data)
            return tuple(map(table.get, keys))
    return tuple(map(os.environ.get, names))


class Redactor:
    """A registry of secrets and the masking step (see the module docstring).

    Linked redactors (`link`, `joined`) are consulted live, so a secret a toolkit learns when a
    server connects is masked in every run that uses the toolkit.
    """

    __slots__ = ("_cache", "_env", "_links", "_names", "_values")

    def __init__(self, *values: str | None) -> None:
        self._values: set[str] = set()
        self._env: set[str] = set()
        self._links: list[Redactor] = []
        # What `secrets` found, keyed by the registries' generation and the environment
        # values read: masking is on every tool result and event, so it is not redone per call.
        self._cache: tuple[tuple[Any, ...], tuple[str, ...]] | None = None
        # (generation, every environment name, their keys in ``os.environ``'s own table)
        self._names: tuple[int, tuple[str, ...], tuple[Any, ...]] | None = None
        self.add(*values)

    # -- feeding -----------------------------------------------------------------------------

    def add(self, *values: str | None) -> None:
        """Register literal secret values (``None``, ``""`` and short values are skipped)."""
        for value in values:
            if isinstance(value, str) and len(value) >= MIN_SECRET:
                self._values.add(value)
                _GENERATION[0] += 1

    def add_env(self, *names: str) -> None:
        """Register environment variables whose *current* values are secrets."""
        self._env.update(names)
        _GENERATION[0] += 1

    def add_setting(self, name: str | None, raw: str) -> None:
        """Register one configured value (a header, an ``env`` entry, an argument).

        Every ``${NAME}`` it references is a secret; so is the value itself when ``name``
        looks like a credential (`is_secret_name`), plus its part after a scheme word
        (``Bearer <credential>``).
        """
        references = env_references(raw)
        if references:
            self.add_env(*references)
        elif name is not None and is_secret_name(name):
            self.add(raw)
            scheme, _, credential = raw.strip().partition(" ")
            if scheme and credential:
                self.add(credential.strip())

    def link(self, other: Redactor) -> None:
        """Also mask everything ``other`` knows, now and later."""
        if other is not self and other not in self._links:
            self._links.append(other)
            _GENERATION[0] += 1

    @classmethod
    def joined(cls, *parts: Redactor | None) -> Redactor:
        """A redactor that masks what every one of ``parts`` knows (live)."""
        joined = cls()
        for part in parts:
            if part is not None:
                joined.link(part)
        return joined

    # -- masking -----------------------------------------------------------------------------

    def secrets(self) -> tuple[str, ...]:
        """Every secret known now, longest first (the environment is read each time)."""
        generation = _GENERATION[0]
        names = self._names
        if names is None or names[0] != generation:
            found_names: set[str] = set()
            self._collect_names(found_names, set())
            ordered = tuple(sorted(found_names))
            names = self._names = (generation, ordered, _env_keys(ordered))
        key = (generation, *_env_values(names[1], names[2]))
        cached = self._cache
        if cached is not None and cached[0] == key:
            return cached[1]
        found: set[str] = set()
        self._collect(found, set())
        secrets = tuple(sorted(found, key=lambda s: (-len(s), s)))
        self._cache = (key, secrets)
        return secrets

    def _collect_names(self, found: set[str], seen: set[int]) -> None:
        if id(self) in seen:
            return
        seen.add(id(self))
        found.update(self._env)
        for other in self._links:
            other._collect_names(found, seen)

    def _collect(self, found: set[str], seen: set[int]) -> None:
        if id(self) in seen:
            return
        seen.add(id(self))
        found.update(self._values)
        for name in self._env:
            value = os.environ.get(name, "")
            if len(value) >= MIN_SECRET:
                found.add(value)
        for other in self._links:
            other._collect(found, seen)

    def __bool__(self) -> bool:
        return bool(self.secrets())

    def text(self, text: str) -> str:
        """``text`` with every secret replaced by `MASK`."""
        for secret in self.secrets():
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def value(self, value: Any) -> Any:
        """``value`` with every string inside it masked: dicts (keys too), lists, tuples and
        dataclass instances (such as a `Request`) that hold a secret are copied with it
        masked; what holds none is returned as it is (the same object), and other objects
        are kept."""
        secrets = self.secrets()
        return _mask(value, secrets) if secrets else value

    def result(self, result: ToolResult) -> ToolResult:
        """A tool result with its output and metadata masked (the same object when clean)."""
        secrets = self.secrets()
        if not secrets:
            return result
        output = _mask(result.output, secrets)
        metadata = _mask(result.metadata, secrets) if result.metadata else result.metadata
        if output is result.output and metadata is result.metadata:
            return result
        return dataclasses.replace(result, output=output, metadata=metadata)

    def scrub(self, exc: BaseException) -> BaseException:
        """Mask ``exc`` in place — its message, ``body``/``message``/``text``/``strerror`` and
        its chained causes — and return it (re-raise the same object)."""
        secrets = self.secrets()
        seen: set[int] = set()
        current: BaseException | None = exc
        while secrets and current is not None and id(current) not in seen:
            seen.add(id(current))
            current.args = tuple(_mask(a, secrets) for a in current.args)
            for attribute in ("body", "message", "text", "strerror"):
                held = getattr(current, attribute, None)
                # A read-only property (ProviderError.text) is derived from the rest anyway.
                if isinstance(held, str):
                    with contextlib.suppress(AttributeError):
                        setattr(current, attribute, _mask(held, secrets))
            current = current.__cause__ or current.__context__
        return exc


def _mask(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` masked; the very same object when it holds no secret (nothing is copied)."""
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        mapping = cast(dict[Any, Any], value)
        out: dict[Any, Any] = {}
        same = True
        for k, v in mapping.items():
            mk, mv = _mask(k, secrets), _mask(v, secrets)
            same = same and mk is k and mv is v
            out[mk] = mv
        return mapping if same else out
    if isinstance(value, list | tuple):
        held = cast(Sequence[Any], value)
        masked_items = [_mask(v, secrets) for v in held]
        if all(a is b for a, b in zip(masked_items, held, strict=True)):
            return held
        return masked_items if isinstance(held, list) else tuple(masked_items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            held = getattr(value, f.name)
            if f.init and isinstance(held, str | dict | list | tuple):
                masked = _mask(held, secrets)
                if masked is not held:
                    changes[f.name] = masked
        return dataclasses.replace(value, **changes) if changes else value
    return value

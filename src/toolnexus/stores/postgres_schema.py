"""The PostgreSQL schema as an ordered list of migrations, and the code that applies them.

The same discipline as `toolnexus.stores.sqlite_schema`: append-only, versions 1, 2, 3, …,
each missing migration applied in its own transaction together with its row in
``toolnexus_schema_migrations(version, name, applied_at)``. Every worker that opens the store
runs `migrate`; a transaction-scoped advisory lock makes concurrent starts apply each migration
exactly once, and a database already up to date is recognised with one read and no lock.

Tables are prefixed ``toolnexus_`` and created in the connection's ``search_path``, so a host
can share a database with its own tables (or give toolnexus its own schema through the URL's
``options=-csearch_path=…``).

Keys: each row's primary key is ``key``, the sha256 of its id, beside the id itself. A btree
entry cannot exceed ~2.7 KB, and ids (conversation ids, request ids) are whatever the host or
a remote server chose; hashing keeps every id storable and the index small.

Column types: ids and the other strings that come from users, tools or models are ``BYTEA``
holding UTF-8, because PostgreSQL ``TEXT`` cannot hold U+0000 and these must round-trip
exactly as in the other stores; JSON documents (transcripts, checkpoints, answers) are
``TEXT``, since JSON escapes U+0000, ``JSONB`` would refuse ``\\u0000`` and reorder keys, and a
checkpoint of a future version must be storable and reported, not rejected by the column.

Versions:
    1 ``conversations``: ``toolnexus_conversations``.
    2 ``run_store``: ``toolnexus_halts`` (see the SQLite migration 2 for the columns).
    3 ``runtime_handles``: ``toolnexus_runtime_handles``, one row per handle of an agent
      runtime, keyed by the sha256 of the runtime id and of the handle id. Handle tables kept
      by earlier versions as one conversation document are moved into it (a document that
      cannot be read is left where it is).
    4 ``request_states``: the request state machine of `toolnexus.stores.requests`. New
      columns on ``toolnexus_halts``: ``token`` (the fencing token, raised by every claim,
      take, answer and cancel), ``recorded`` (the answer was recorded before the claim or
      applied under it, so a released or lapsed claim goes back to ``answered``, not
      ``pending``), ``settled_at``, ``outcome`` (the resumed run's outcome as JSON text) and
      ``queue_key`` (the sha256 of the checkpoint's `Checkpoint.queue`: which resumers may
      take it; a queue name may be as long as a runtime id). ``status`` now holds
      ``pending``, ``answered``, ``claimed``, ``done``, ``expired`` or ``cancelled``. Before,
      ``answered`` meant finished once the checkpoint was dropped: those rows become
      ``done`` (``expired`` for the expired decline) with ``settled_at = answered_at``; an
      ``answered`` row that still holds its checkpoint was posted but never resumed, and
      stays ``answered`` (now recorded, queued for a resumer of the default queue). Three
      partial indexes keep the hot queries index-driven however many settled rows pile up:
      the pending index (``list_pending``), the worker queues (``take()``) and retention
      (``purge``).
    5 ``answer_in_one_statement``: ``halt_digest`` and ``deadline`` on ``toolnexus_halts``,
      copied from the checkpoint at save_halt, so that recording an answer is one guarded
      ``UPDATE`` (rows saved before take the reading path).
    6 ``a2a_tasks``: ``toolnexus_a2a_tasks``, the A2A tasks of a served agent, keyed by the
      sha256 of the task id, with ``context_key`` (sha256 of the context id), ``state`` and
      ``updated_at`` for ListTasks and follow-ups, and the task's JSON as ``body``.
    7 ``inbox``: ``announced`` on ``toolnexus_halts`` (an inbox announced the request; rows
      saved before count as announced) and the inbox's partial indexes: the unannounced
      waiting rows, and the answered rows by ``answered_at`` and by ``answered_by``.
    8 ``queue_order``: the worker queue's index gains ``request_id``, so it holds the take's
      whole order (``answered_at, request_id``): the head of a queue is read in index order
      whatever the planner's statistics say. Before, a queue filled faster than autovacuum
      analyzed the table (a burst of answers) was read whole and sorted on every take —
      10,000 rows, ~10 ms a take. (Rebuilding the index locks ``toolnexus_halts`` against
      writes while it runs: one pass over the queued rows only, as the index is partial.)
    9 ``audit_and_flags``: on ``toolnexus_halts``, ``original`` (the model's call an approval
      with edited arguments replaced, as JSON: `toolnexus.stores.checks.edit_audit`),
      ``problem`` (``BYTEA``) and ``flagged_at`` (a resumer's flag, T13: an infinite hold is
      ``lease_until = 'Infinity'``), and ``checkpoint_sha256`` / ``checkpoint_version``: the
      sha256 of the checkpoint's text (UTF-8) and the format version it declares, written with
      it at save_halt, so that the one-statement answer proves the checkpoint readable without
      parsing it (a row whose text no longer has that hash, or whose version this toolnexus
      does not read, takes the reading path, which parses it and refuses it unreadable). The
      pending index is rebuilt to hold the unsettled flagged rows too (what ``list_pending``
      shows). Rows saved before have no hash (the reading path answers them), no original and
      no problem.
    10 ``a2a_callers``: ``toolnexus_a2a_tasks.owner`` (``BYTEA``), the caller that created
      the task (NULL: made without one; rows saved before have none), indexed with
      ``updated_at`` for ListTasks; and ``toolnexus_a2a_contexts``, each context's claim
      keyed by the sha256 of the context id — the task that holds it (its key and id) and
      until when — which one conditional ``INSERT … ON CONFLICT`` takes.
    11 ``inbox_sessions``: ``toolnexus_inbox_sessions``, the approvals inbox's sessions
      (`toolnexus.stores.sessions`), keyed by the sha256 of the session cookie (the digest's
      bytes), with the user's name (``BYTEA``), the tag of the token they signed in with, and
      when it began and ends (indexed: expired rows are deleted by that index).
    12 ``asked``: ``toolnexus_halts.asked`` (``TEXT``, JSON), what the request asked
      (`toolnexus.stores.asked`), written with the checkpoint at save_halt and kept when the
      checkpoint goes (see the SQLite migration 10). Rows saved before have none.
    13 ``operator_reads``: ``holder`` on ``toolnexus_halts``, who took the claim (T4, T5: the
      taking process's `toolnexus.stores.requests.holder_name`; rows claimed before have
      none); ``toolnexus_halts_runs``, a partial index of the rows between an answer and
      their end (``answered``, ``claimed``) by age, for the operator's listing of runs in
      flight; and ``toolnexus_halts_id_prefix``, the first 64 bytes of each request id, for
      finding the requests whose id begins with what an operator typed (a range on it, the
      full prefix checked on the rows it finds; ids stay unbounded, the key stays their
      hash). Building it reads every row once and holds off writes while it runs.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, LiteralString, cast

from ..errors import StoreError
from .sqlite_schema import Migration

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["ADVISORY_LOCK", "MIGRATIONS", "from_bytea", "migrate", "row_key", "to_bytea"]

ADVISORY_LOCK = 0x746F6F6C6E657875
"""The ``pg_advisory_xact_lock`` key migrations hold ("toolnexu" in ASCII)."""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        version=1,
        name="conversations",
        statements=(
            "CREATE TABLE toolnexus_conversations ("
            " key BYTEA PRIMARY KEY,"
            " id BYTEA NOT NULL,"
            " messages TEXT NOT NULL,"
            " updated_at DOUBLE PRECISION"
            ")",
        ),
    ),
    Migration(
        version=2,
        name="run_store",
        statements=(
            "CREATE TABLE toolnexus_halts ("
            " key BYTEA PRIMARY KEY,"
            " request_id BYTEA NOT NULL,"
            " status TEXT NOT NULL CHECK (status IN ('pending', 'claimed', 'answered')),"
            " checkpoint TEXT,"
            " kind BYTEA,"
            " tool BYTEA,"
            " conversation_id BYTEA,"
            " created_at DOUBLE PRECISION,"
            " expires_at BYTEA,"
            " prompt BYTEA,"
            " lease_until DOUBLE PRECISION,"
            " answer TEXT,"
            " answered_by BYTEA,"
            " answered_at DOUBLE PRECISION,"
            " digest TEXT NOT NULL DEFAULT ''"
            ")",
            # Only what is waiting, in age order; filters are checked on those rows, ties in
            # created_at sorted by request_id. Each further index costs every write.
            "CREATE INDEX toolnexus_halts_pending ON toolnexus_halts (created_at)"
            " WHERE status = 'pending' AND checkpoint IS NOT NULL",
        ),
    ),
    Migration(
        version=3,
        name="runtime_handles",
        statements=(
            "CREATE TABLE toolnexus_runtime_handles ("
            " runtime_key BYTEA NOT NULL,"
            " handle_key BYTEA NOT NULL,"
            " runtime_id BYTEA NOT NULL,"
            " handle_id BYTEA NOT NULL,"
            " data TEXT NOT NULL,"
            " updated_at DOUBLE PRECISION,"
            " PRIMARY KEY (runtime_key, handle_key)"
            ")",
            # One document per runtime, each moved in its own subtransaction: a document that
            # is not a JSON array of objects with string ids stays where it is.
            "DO $$ DECLARE doc record; BEGIN"
            " FOR doc IN SELECT key, id, messages, updated_at FROM toolnexus_conversations"
            " WHERE substring(id from 1 for 22) = convert_to('__toolnexus_runtime__/', 'UTF8')"
            " LOOP BEGIN"
            " IF json_typeof(doc.messages::json) <> 'array' OR EXISTS ("
            " SELECT 1 FROM json_array_elements(doc.messages::json) AS e"
            " WHERE json_typeof(e) <> 'object'"
            " OR json_typeof(e -> 'id') IS DISTINCT FROM 'string')"
            " THEN CONTINUE; END IF;"
            " INSERT INTO toolnexus_runtime_handles (runtime_key, handle_key, runtime_id,"
            " handle_id, data, updated_at)"
            " SELECT sha256(substring(doc.id from 23)), sha256(convert_to(e ->> 'id', 'UTF8')),"
            " substring(doc.id from 23), convert_to(e ->> 'id', 'UTF8'), e::text, doc.updated_at"
            " FROM json_array_elements(doc.messages::json) AS e"
            " ON CONFLICT DO NOTHING;"
            " DELETE FROM toolnexus_conversations WHERE key = doc.key;"
            " EXCEPTION WHEN others THEN NULL;"
            " END; END LOOP; END $$",
        ),
    ),
    Migration(
        version=4,
        name="request_states",
        statements=(
            "ALTER TABLE toolnexus_halts"
            " ADD COLUMN token BIGINT NOT NULL DEFAULT 0,"
            " ADD COLUMN recorded BOOLEAN NOT NULL DEFAULT false,"
            " ADD COLUMN settled_at DOUBLE PRECISION,"
            " ADD COLUMN outcome TEXT,"
            " ADD COLUMN queue_key BYTEA NOT NULL DEFAULT sha256(''::bytea),"
            " DROP CONSTRAINT toolnexus_halts_status_check",
            # Finished runs (their checkpoint dropped by complete) are settled; the expired
            # decline was recorded as answered by "toolnexus:expired".
            "UPDATE toolnexus_halts SET settled_at = answered_at, status = CASE"
            " WHEN answered_by = convert_to('toolnexus:expired', 'UTF8') THEN 'expired'"
            " ELSE 'done' END WHERE status = 'answered' AND checkpoint IS NULL",
            "UPDATE toolnexus_halts SET recorded = true WHERE status = 'answered'",
            # Every claimed row has a lease, so a lapsed one is found by comparing it.
            "UPDATE toolnexus_halts SET lease_until = 0"
            " WHERE status = 'claimed' AND lease_until IS NULL",
            "ALTER TABLE toolnexus_halts ADD CONSTRAINT toolnexus_halts_status_check CHECK"
            " (status IN ('pending', 'answered', 'claimed', 'done', 'expired', 'cancelled'))",
            # What the inbox lists: pending rows and host claims (which become pending again
            # when their lease runs out), in age order; ties are sorted on the few rows that
            # share a created_at, and the filters are checked on the rows read. A pending row
            # always has its checkpoint and is never recorded, so only the claims test those:
            # one condition per status keeps the planner's row estimate right.
            "DROP INDEX toolnexus_halts_pending",
            "CREATE INDEX toolnexus_halts_pending ON toolnexus_halts (created_at)"
            " WHERE status = 'pending'"
            " OR (status = 'claimed' AND NOT recorded AND checkpoint IS NOT NULL)",
            # The worker queues: recorded answers (and taken claims, which are queued again
            # when their lease runs out), per queue, oldest answer first. An answered row is
            # always recorded.
            "CREATE INDEX toolnexus_halts_queue ON toolnexus_halts (queue_key, answered_at)"
            " WHERE status = 'answered' OR (status = 'claimed' AND recorded)",
            # Retention: settled rows by when they settled.
            "CREATE INDEX toolnexus_halts_settled ON toolnexus_halts (settled_at)"
            " WHERE status IN ('done', 'expired', 'cancelled')",
        ),
    ),
    Migration(
        version=5,
        name="answer_in_one_statement",
        statements=(
            # Copied from the checkpoint at save_halt, so that recording an answer (T2) is one
            # guarded UPDATE: the halted call's digest and expiresAt as epoch seconds. Rows
            # saved before have NULLs and take the reading path.
            "ALTER TABLE toolnexus_halts"
            " ADD COLUMN halt_digest TEXT,"
            " ADD COLUMN deadline DOUBLE PRECISION",
        ),
    ),
    Migration(
        version=6,
        name="a2a_tasks",
        statements=(
            "CREATE TABLE toolnexus_a2a_tasks ("
            " key BYTEA PRIMARY KEY,"
            " task_id BYTEA NOT NULL,"
            " context_key BYTEA,"
            " state TEXT NOT NULL,"
            " updated_at DOUBLE PRECISION NOT NULL,"
            " body TEXT NOT NULL"
            ")",
            "CREATE INDEX toolnexus_a2a_tasks_context ON toolnexus_a2a_tasks"
            " (context_key, updated_at)",
            "CREATE INDEX toolnexus_a2a_tasks_updated ON toolnexus_a2a_tasks (updated_at)",
        ),
    ),
    Migration(
        version=7,
        name="inbox",
        statements=(
            # Whether an inbox has announced the request (`InboxIndex.take_unannounced`);
            # requests saved before count as announced (no flood from a first inbox).
            "ALTER TABLE toolnexus_halts ADD COLUMN announced BOOLEAN NOT NULL DEFAULT true",
            "ALTER TABLE toolnexus_halts ALTER COLUMN announced SET DEFAULT false",
            "CREATE INDEX toolnexus_halts_unannounced ON toolnexus_halts (created_at)"
            " WHERE NOT announced AND status IN ('pending', 'claimed')",
            # The audit, newest answer first; and by person.
            "CREATE INDEX toolnexus_halts_history ON toolnexus_halts (answered_at)"
            " WHERE answered_at IS NOT NULL",
            "CREATE INDEX toolnexus_halts_answerer ON toolnexus_halts (answered_by, answered_at)"
            " WHERE answered_at IS NOT NULL",
        ),
    ),
    Migration(
        version=8,
        name="queue_order",
        statements=(
            # The take's whole ORDER BY, so that LIMIT 1 reads the queue's head in index
            # order (no sort of every queued row, whatever the statistics say).
            "DROP INDEX toolnexus_halts_queue",
            "CREATE INDEX toolnexus_halts_queue ON toolnexus_halts"
            " (queue_key, answered_at, request_id)"
            " WHERE status = 'answered' OR (status = 'claimed' AND recorded)",
        ),
    ),
    Migration(
        version=9,
        name="audit_and_flags",
        statements=(
            "ALTER TABLE toolnexus_halts"
            " ADD COLUMN original TEXT,"
            " ADD COLUMN problem BYTEA,"
            " ADD COLUMN flagged_at DOUBLE PRECISION,"
            " ADD COLUMN checkpoint_sha256 BYTEA,"
            " ADD COLUMN checkpoint_version INTEGER",
            # What list_pending shows: the waiting rows, as before, and the unsettled rows a
            # resumer flagged for an operator (T13), whatever their lease. One disjunct per
            # kind of row, as the listing's own WHERE spells them, so the planner proves the
            # listing's rows are the index's.
            "DROP INDEX toolnexus_halts_pending",
            "CREATE INDEX toolnexus_halts_pending ON toolnexus_halts (created_at)"
            " WHERE status = 'pending'"
            " OR (status = 'claimed' AND NOT recorded AND checkpoint IS NOT NULL)"
            " OR (problem IS NOT NULL AND status IN ('answered', 'claimed')"
            " AND checkpoint IS NOT NULL)",
        ),
    ),
    Migration(
        version=10,
        name="a2a_callers",
        statements=(
            "ALTER TABLE toolnexus_a2a_tasks ADD COLUMN owner BYTEA",
            "CREATE INDEX toolnexus_a2a_tasks_owner ON toolnexus_a2a_tasks (owner, updated_at)",
            "CREATE TABLE toolnexus_a2a_contexts ("
            " context_key BYTEA PRIMARY KEY,"
            " task_key BYTEA NOT NULL,"
            " task_id BYTEA NOT NULL,"
            " until DOUBLE PRECISION NOT NULL"
            ")",
        ),
    ),
    Migration(
        version=11,
        name="inbox_sessions",
        statements=(
            "CREATE TABLE toolnexus_inbox_sessions ("
            " key BYTEA PRIMARY KEY,"
            " user_name BYTEA NOT NULL,"
            " tag TEXT NOT NULL,"
            " created_at DOUBLE PRECISION NOT NULL,"
            " expires_at DOUBLE PRECISION NOT NULL"
            ")",
            "CREATE INDEX toolnexus_inbox_sessions_expiry ON toolnexus_inbox_sessions (expires_at)",
        ),
    ),
    Migration(
        version=12,
        name="asked",
        statements=("ALTER TABLE toolnexus_halts ADD COLUMN asked TEXT",),
    ),
    Migration(
        version=13,
        name="operator_reads",
        statements=(
            "ALTER TABLE toolnexus_halts ADD COLUMN holder TEXT",
            "CREATE INDEX toolnexus_halts_runs ON toolnexus_halts (created_at)"
            " WHERE status IN ('answered', 'claimed')",
            "CREATE INDEX toolnexus_halts_id_prefix ON toolnexus_halts"
            " ((substr(request_id, 1, 64)))",
        ),
    ),
)
"""Every migration, oldest first. Append only."""


@functools.lru_cache(maxsize=4096)
def row_key(id: str) -> bytes:
    """The primary key for an id: its sha256 (see Keys above). Remembered for the last few
    thousand ids: one request's statements (answer, take, progress, settle, their NOTIFY
    payloads) key the same row, and a worker's queue key is the same for every take."""
    return hashlib.sha256(id.encode()).digest()


def to_bytea(text: str | None) -> bytes | None:
    """A user string as its ``BYTEA`` column value (UTF-8; see Column types above)."""
    return None if text is None else text.encode()


def from_bytea(value: object) -> Any:
    """A ``BYTEA`` column value back to its string; anything else as it is."""
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode()  # pyright: ignore[reportUnknownArgumentType]
    return value


_CREATE_LEDGER = (
    "CREATE TABLE IF NOT EXISTS toolnexus_schema_migrations ("
    " version INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " applied_at DOUBLE PRECISION NOT NULL"
    ")"
)


async def schema_version(conn: AsyncConnection[Any]) -> int:
    """The highest recorded migration version; 0 for a database with no ledger yet."""
    cur = await conn.execute("SELECT to_regclass('toolnexus_schema_migrations') IS NOT NULL")
    found = await cur.fetchone()
    if found is None or not found[0]:
        return 0
    cur = await conn.execute("SELECT coalesce(max(version), 0) FROM toolnexus_schema_migrations")
    row = await cur.fetchone()
    return int(row[0]) if row is not None else 0


async def migrate(
    conn: AsyncConnection[Any], migrations: Sequence[Migration] = MIGRATIONS, *, where: str = ""
) -> int:
    """Bring the database up to the newest migration; return the resulting version.

    Args:
        conn: an autocommit connection.
        migrations: the ordered list (versions 1, 2, 3, …).
        where: a description of the database for error messages.

    Raises:
        StoreError: the database records a version newer than ``migrations`` knows.
        psycopg.Error: PostgreSQL failed; the failing migration was rolled back.
    """
    known = len(migrations)
    current = await schema_version(conn)
    if current < known:
        for migration in migrations[current:]:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_LOCK,))
                await conn.execute(_CREATE_LEDGER)
                cur = await conn.execute(
                    "SELECT 1 FROM toolnexus_schema_migrations WHERE version = %s",
                    (migration.version,),
                )
                if await cur.fetchone() is None:
                    for statement in migration.statements:
                        # Our own constants (Migration types them as plain str).
                        await conn.execute(cast(LiteralString, statement))
                    await conn.execute(
                        "INSERT INTO toolnexus_schema_migrations (version, name, applied_at)"
                        " VALUES (%s, %s, %s)",
                        (migration.version, migration.name, time.time()),
                    )
        current = await schema_version(conn)
    if current > known:
        place = f"{where} " if where else ""
        raise StoreError(
            f"the database {place}has schema version {current}, newer than the newest this "
            f"toolnexus knows ({known}); upgrade toolnexus to use it (nothing was changed)"
        )
    return current

"""The SQLite schema as an ordered list of migrations, and the code that applies them.

Every change to the schema is a new `Migration` appended to `MIGRATIONS` with the next version
number; a released migration is never edited. `migrate` runs at open and applies each missing
migration in its own ``BEGIN IMMEDIATE`` transaction together with its row in
``schema_migrations(version, name, applied_at)``, so a migration is either fully applied and
recorded or not at all, and two processes opening a fresh file at once apply it once.

A database whose recorded version is newer than the newest migration here was written by a
newer toolnexus; it is refused with a `StoreError` rather than used (or "downgraded") blindly.

The file's header carries the same version (``PRAGMA user_version``, see `stamped_version`),
written in each migration's transaction: a store's readiness check on a new connection reads
it without touching a table (a fresh open costs one table read less), and sends any file whose
stamp is not this toolnexus's version to `migrate`, which goes by the ledger. A current file
migrated before the stamp existed is stamped at its next open.

Two helpers every SQLite job shares live here too: `immediate` (one write transaction) and
`wal_pages` (what a write costs the WAL, for the checkpoint schedule).

Versions:
    1 ``conversations``: one row per conversation, its transcript as JSON text.
    2 ``run_store``: ``halts``, one row per Request id: the halted checkpoint (JSON text,
      NULL once the resume completed or for a request answered without one), its status
      (``pending`` → ``claimed`` → ``answered``), the pending-index columns copied from the
      checkpoint (kind, tool, conversation, created_at, expires_at, prompt), the claim's lease,
      and the accepted answer (JSON), who gave it, when, and the digest of the halted call.
      One partial index covers exactly the rows and columns `list_pending` filters on.
    3 ``runtime_handles``: the agent runtime's handle table, one row per
      ``(runtime_id, handle_id)`` with the handle's row as JSON text and ``updated_at``. A
      handle table kept by earlier versions as one conversation document (id
      ``__toolnexus_runtime__/<runtime id>``) is moved into it; a document that cannot be read
      is left where it is.
    4 ``request_states``: ``halts`` rebuilt for the request state machine of
      `toolnexus.stores.requests` (T1–T12): status ``pending``, ``answered`` (recorded, queued
      for a resumer), ``claimed``, ``done``, ``expired``, ``cancelled``; the fencing ``token``
      every claim and take increments; ``recorded`` (the answer was recorded before the claim,
      so a claim given back or run out returns to ``answered``, not ``pending``); ``settled_at``
      and the resumed run's ``outcome``; ``queue``, the checkpoint's `Checkpoint.queue`
      (which resumers may take it). Rows of version 2/3 with status ``answered`` were
      finished runs: they become ``done`` (``expired`` when answered by
      ``toolnexus:expired``) with ``settled_at = answered_at``. Three partial indexes: the
      pending index (``list_pending``), the worker queues (``take()``, oldest answer first)
      and the settled rows by ``settled_at`` (``purge``).
    5 ``a2a_tasks``: the A2A tasks of a served agent (`toolnexus.serve.tasks_sql`), one row per
      task id: its JSON, its context id and state (ListTasks filters), ``updated_at``.
    6 ``inbox``: ``halts.announced`` (an inbox has announced the request; rows saved before
      count as announced) and the inbox's partial indexes: the unannounced waiting rows, and
      the answered rows by ``answered_at`` and by ``answered_by`` (the audit).
    7 ``audit_and_flags``: on ``halts``, ``original`` (the model's call an approval with edited
      arguments replaced, as JSON: `toolnexus.stores.checks.edit_audit`), ``problem`` and
      ``flagged_at`` (a resumer's flag, T13). ``halts_pending`` is rebuilt to hold what
      `list_pending` shows since: the waiting rows and the unsettled flagged ones (an
      infinite hold is the REAL ``Inf`` in ``lease_until``). Rows of version 6 have no
      original, no problem, and keep their status.
    8 ``a2a_callers``: ``a2a_tasks.owner``, the caller that created the task (NULL: made
      without one; rows saved before have none), indexed with ``updated_at`` for ListTasks;
      and ``a2a_contexts``, each context's claim — the task that holds it and until when —
      which one conditional write takes (one message at a time per context).
    9 ``inbox_sessions``: the approvals inbox's sessions (`toolnexus.stores.sessions`), one
      row per session keyed by the sha256 of its cookie, with the user's name, the tag of the
      token they signed in with, and when it began and ends (indexed: expired rows are
      deleted by that index).
    10 ``asked``: ``halts.asked``, what the request asked (`toolnexus.stores.asked`: the
      halted call's tool and arguments, the agent path, the link, and the conversation
      around it) as JSON, written with the checkpoint at ``save_halt`` and kept when the
      checkpoint goes (T8, T11), so a finished request's page still shows its call. Rows
      saved before have none.
    11 ``operator_reads``: ``halts.holder``, who took the claim (T4, T5: the taking process's
      `toolnexus.stores.requests.holder_name`), and ``halts_runs``, a partial index of the
      rows between an answer and their end (``answered``, ``claimed``) in age order, for the
      operator's listing of runs in flight (`InboxIndex.list_runs`). Rows of version 10 have no
      holder. (A request id prefix is looked up on the primary key's index.)
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from ..errors import StoreError
from ._handlerows import LEGACY_PREFIX, legacy_rows

__all__ = [
    "MIGRATIONS",
    "Migration",
    "immediate",
    "migrate",
    "schema_version",
    "stamped_version",
    "wal_pages",
]

_PAGE = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class Migration:
    """One schema step: SQL statements applied together in one transaction.

    Attributes:
        version: 1 for the first migration, then consecutive integers.
        name: a short label recorded in ``schema_migrations``.
        statements: DDL/DML statements, one per string (no ``;``-joined scripts).
        data_step: SQLite only: a function run after the statements, in the same
            transaction, for data moves that SQL alone cannot do portably.
    """

    version: int
    name: str
    statements: tuple[str, ...]
    data_step: Callable[[sqlite3.Connection], None] | None = None


def _move_legacy_runtime_tables(conn: sqlite3.Connection) -> None:
    """Move every readable handle-table document into ``runtime_handles`` (migration 3)."""
    # The reserved ids sort between the prefix and the prefix with its "/" bumped to "0".
    upper = LEGACY_PREFIX[:-1] + "0"
    docs = conn.execute(
        "SELECT id, messages, updated_at FROM conversations WHERE id >= ? AND id < ?",
        (LEGACY_PREFIX, upper),
    ).fetchall()
    for doc_id, text, updated_at in docs:
        rows = legacy_rows(text)
        if rows is None:
            continue
        runtime_id = doc_id[len(LEGACY_PREFIX) :]
        conn.executemany(
            "INSERT OR IGNORE INTO runtime_handles (runtime_id, handle_id, data, updated_at)"
            " VALUES (?, ?, ?, ?)",
            [(runtime_id, handle_id, data, updated_at) for handle_id, data in rows],
        )
        conn.execute("DELETE FROM conversations WHERE id = ?", (doc_id,))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        version=1,
        name="conversations",
        statements=(
            "CREATE TABLE conversations ("
            " id TEXT PRIMARY KEY,"
            " messages TEXT NOT NULL,"
            " updated_at REAL"
            ")",
        ),
    ),
    Migration(
        version=2,
        name="run_store",
        statements=(
            "CREATE TABLE halts ("
            " request_id TEXT PRIMARY KEY,"
            " status TEXT NOT NULL CHECK (status IN ('pending', 'claimed', 'answered')),"
            " checkpoint TEXT,"
            " kind TEXT,"
            " tool TEXT,"
            " conversation_id TEXT,"
            " created_at REAL,"
            " expires_at TEXT,"
            " prompt TEXT,"
            " lease_until REAL,"
            " answer TEXT,"
            " answered_by TEXT,"
            " answered_at REAL,"
            " digest TEXT NOT NULL DEFAULT ''"
            ")",
            # One partial index, covering the filter columns: it holds only what is
            # waiting, in list order, so every list_pending filter walks it without touching
            # the table. Measured: each further index on halts costs a WAL page per write,
            # ≈ 10-15 µs on every save_halt, claim and complete.
            "CREATE INDEX halts_pending ON halts"
            " (created_at, request_id, kind, tool, conversation_id)"
            " WHERE status = 'pending' AND checkpoint IS NOT NULL",
        ),
    ),
    Migration(
        version=3,
        name="runtime_handles",
        statements=(
            # The primary key's index serves both the upsert and a runtime's load (a range
            # scan in handle order); no other index, so a save touches one table page.
            "CREATE TABLE runtime_handles ("
            " runtime_id TEXT NOT NULL,"
            " handle_id TEXT NOT NULL,"
            " data TEXT NOT NULL,"
            " updated_at REAL,"
            " PRIMARY KEY (runtime_id, handle_id)"
            ")",
        ),
        data_step=_move_legacy_runtime_tables,
    ),
    Migration(
        version=4,
        name="request_states",
        statements=(
            # A CHECK constraint cannot be altered in place: the table is rebuilt.
            "CREATE TABLE halts_v4 ("
            " request_id TEXT PRIMARY KEY,"
            " status TEXT NOT NULL CHECK (status IN"
            " ('pending', 'answered', 'claimed', 'done', 'expired', 'cancelled')),"
            " checkpoint TEXT,"
            " kind TEXT,"
            " tool TEXT,"
            " conversation_id TEXT,"
            " created_at REAL,"
            " expires_at TEXT,"
            " prompt TEXT,"
            " lease_until REAL,"
            " answer TEXT,"
            " answered_by TEXT,"
            " answered_at REAL,"
            " digest TEXT NOT NULL DEFAULT '',"
            " token INTEGER NOT NULL DEFAULT 0,"
            " recorded INTEGER NOT NULL DEFAULT 0,"
            " settled_at REAL,"
            " outcome TEXT,"
            " queue TEXT NOT NULL DEFAULT ''"
            ")",
            # Version 2's ``answered`` meant finished. (The literal is `EXPIRED_BY` as it was
            # when this migration was released: a migration never changes.)
            "INSERT INTO halts_v4 (request_id, status, checkpoint, kind, tool, conversation_id,"
            " created_at, expires_at, prompt, lease_until, answer, answered_by, answered_at,"
            " digest, settled_at)"
            " SELECT request_id,"
            " CASE WHEN status <> 'answered' THEN status"
            " WHEN answered_by = 'toolnexus:expired' THEN 'expired' ELSE 'done' END,"
            " checkpoint, kind, tool, conversation_id, created_at, expires_at, prompt,"
            " lease_until, answer, answered_by, answered_at, digest,"
            " CASE WHEN status = 'answered' THEN answered_at END"
            " FROM halts",
            "DROP TABLE halts",
            "ALTER TABLE halts_v4 RENAME TO halts",
            # The pending index: what waits for a human, and the claims made with their own
            # answer (T4), which T10 lists again once their lease runs out; in list order,
            # with every column list_pending filters on, so a filter never reads the table
            # for a row it drops.
            "CREATE INDEX halts_pending ON halts"
            " (created_at, request_id, kind, tool, conversation_id, status, lease_until)"
            " WHERE recorded = 0 AND status IN ('pending', 'claimed')"
            " AND checkpoint IS NOT NULL",
            # The worker queues: recorded answers waiting for a resumer, and the takes (T5)
            # T10 queues again once their lease runs out; per queue, oldest answer first.
            "CREATE INDEX halts_queue ON halts"
            " (queue, answered_at, request_id, status, lease_until)"
            " WHERE recorded = 1 AND status IN ('answered', 'claimed')",
            # What purge deletes, by age.
            "CREATE INDEX halts_settled ON halts (settled_at)"
            " WHERE status IN ('done', 'expired', 'cancelled')",
        ),
    ),
    Migration(
        version=5,
        name="a2a_tasks",
        statements=(
            # The A2A tasks of a served agent (`toolnexus.serve.tasks_sql`): one row per task,
            # its wire JSON as text, with the columns ListTasks and a follow-up filter on.
            "CREATE TABLE a2a_tasks ("
            " task_id TEXT PRIMARY KEY,"
            " context_id TEXT,"
            " state TEXT NOT NULL,"
            " updated_at REAL NOT NULL,"
            " body TEXT NOT NULL"
            ")",
            "CREATE INDEX a2a_tasks_context ON a2a_tasks (context_id, updated_at)",
            "CREATE INDEX a2a_tasks_updated ON a2a_tasks (updated_at)",
        ),
    ),
    Migration(
        version=6,
        name="inbox",
        statements=(
            # Whether an inbox has announced the request (`InboxIndex.take_unannounced`).
            # Requests saved before are taken as announced: a first inbox does not notify
            # the whole backlog.
            "ALTER TABLE halts ADD COLUMN announced INTEGER NOT NULL DEFAULT 0",
            "UPDATE halts SET announced = 1",
            "CREATE INDEX halts_unannounced ON halts (created_at, request_id)"
            " WHERE announced = 0 AND recorded = 0 AND status IN ('pending', 'claimed')"
            " AND checkpoint IS NOT NULL",
            # The audit, newest answer first; and by person.
            "CREATE INDEX halts_history ON halts (answered_at, request_id)"
            " WHERE answered_at IS NOT NULL",
            "CREATE INDEX halts_answerer ON halts (answered_by, answered_at, request_id)"
            " WHERE answered_at IS NOT NULL",
        ),
    ),
    Migration(
        version=7,
        name="audit_and_flags",
        statements=(
            "ALTER TABLE halts ADD COLUMN original TEXT",
            "ALTER TABLE halts ADD COLUMN problem TEXT",
            "ALTER TABLE halts ADD COLUMN flagged_at REAL",
            # What list_pending shows: the rows waiting for a human, as before, and the
            # unsettled rows a resumer flagged for an operator (T13), whatever their lease;
            # with every filter column, as before, and the problem the listing tests.
            "DROP INDEX halts_pending",
            "CREATE INDEX halts_pending ON halts"
            " (created_at, request_id, kind, tool, conversation_id, status, lease_until, problem)"
            " WHERE checkpoint IS NOT NULL AND status IN ('pending', 'answered', 'claimed')"
            " AND (recorded = 0 OR problem IS NOT NULL)",
        ),
    ),
    Migration(
        version=8,
        name="a2a_callers",
        statements=(
            "ALTER TABLE a2a_tasks ADD COLUMN owner TEXT",
            "CREATE INDEX a2a_tasks_owner ON a2a_tasks (owner, updated_at)",
            # One row per context that a task claimed: taken, renewed and given up by
            # conditional writes on this row alone (`toolnexus.serve.tasks_sql`).
            "CREATE TABLE a2a_contexts ("
            " context_id TEXT PRIMARY KEY,"
            " task_id TEXT NOT NULL,"
            " until REAL NOT NULL"
            ")",
        ),
    ),
    Migration(
        version=9,
        name="inbox_sessions",
        statements=(
            "CREATE TABLE inbox_sessions ("
            " key TEXT PRIMARY KEY,"
            " user_name TEXT NOT NULL,"
            " tag TEXT NOT NULL,"
            " created_at REAL NOT NULL,"
            " expires_at REAL NOT NULL"
            ")",
            "CREATE INDEX inbox_sessions_expiry ON inbox_sessions (expires_at)",
        ),
    ),
    Migration(
        version=10,
        name="asked",
        statements=("ALTER TABLE halts ADD COLUMN asked TEXT",),
    ),
    Migration(
        version=11,
        name="operator_reads",
        statements=(
            "ALTER TABLE halts ADD COLUMN holder TEXT",
            # The runs in flight: few rows (what is queued or held now), oldest first.
            "CREATE INDEX halts_runs ON halts (created_at, request_id)"
            " WHERE status IN ('answered', 'claimed')",
        ),
    ),
)
"""Every migration, oldest first. Append only."""

_CREATE_LEDGER = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " applied_at REAL NOT NULL"
    ")"
)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Generator[sqlite3.Connection]:
    """Run a block in one ``BEGIN IMMEDIATE`` transaction: commit on success, else roll back.

    The connection must be in autocommit mode (``isolation_level=None``). ``IMMEDIATE`` takes
    the write lock up front, so a read-then-write block cannot lose a race halfway through.

    Example:
        >>> conn = sqlite3.connect(":memory:", isolation_level=None)
        >>> with immediate(conn):
        ...     _ = conn.execute("CREATE TABLE t (x)")
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def wal_pages(text: str) -> int:
    """The WAL pages a row holding ``text`` costs to write: its table page(s) and an index."""
    return 2 + len(text) // _PAGE


def schema_version(conn: sqlite3.Connection) -> int:
    """The highest recorded migration version; 0 for a database with no ledger yet."""
    ledger = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if ledger is None:
        return 0
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


def migrate(
    conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS, *, where: str = ""
) -> int:
    """Bring the database up to the newest migration; return the resulting version.

    Idempotent: migrations already recorded are skipped, re-checked inside each transaction so
    that a concurrent opener's work is never repeated. Reads only when nothing is missing.

    Args:
        conn: an autocommit connection (``isolation_level=None``).
        migrations: the ordered list (versions 1, 2, 3, …).
        where: a description of the database for error messages (e.g. its path).

    Raises:
        StoreError: the database records a version newer than ``migrations`` knows.
        ValueError: ``migrations`` is not numbered 1, 2, 3, … (a programming error).
        sqlite3.Error: SQLite failed; the failing migration was rolled back.
    """
    _check_numbering(migrations)
    known = len(migrations)
    current = schema_version(conn)
    if current > known:
        place = f"{where} " if where else ""
        raise StoreError(
            f"the database {place}has schema version {current}, newer than the newest this "
            f"toolnexus knows ({known}); upgrade toolnexus to use it (nothing was changed)"
        )
    for migration in migrations[current:]:
        with immediate(conn):
            conn.execute(_CREATE_LEDGER)
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
            ).fetchone()
            if done is None:
                for statement in migration.statements:
                    conn.execute(statement)
                if migration.data_step is not None:
                    migration.data_step(conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, time.time()),
                )
                conn.execute(f"PRAGMA user_version = {migration.version:d}")
    if stamped_version(conn) != known:  # migrated by a build that did not stamp the header
        # Read-only or locked: the file stays usable, through the worker's checks.
        with suppress(sqlite3.Error):
            conn.execute(f"PRAGMA user_version = {known:d}")
    return max(current, known)


def stamped_version(conn: sqlite3.Connection) -> int:
    """The schema version stamped in the file's header (``PRAGMA user_version``).

    `migrate` writes it in the same transaction as each migration's ledger row, and stamps a
    current file that lacks it; reading it touches no table, so it is what the inline
    connection checks before use (`toolnexus.stores.sqlite`). The ledger stays the authority
    `migrate` goes by.
    """
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row is not None else 0


def _check_numbering(migrations: Sequence[Migration]) -> None:
    for position, migration in enumerate(migrations, start=1):
        if migration.version != position:
            raise ValueError(
                f"migration {migration.name!r} has version {migration.version}, "
                f"expected {position}: versions must run 1, 2, 3, … in order"
            )

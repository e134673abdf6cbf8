"""SqliteStore on real files: durability, migrations, and every failure a user can meet."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator, Generator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from toolnexus.errors import StoreError, UsageError
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import (
    MIGRATIONS,
    Migration,
    migrate,
    schema_version,
    stamped_version,
)

HELLO = [{"role": "user", "content": "hello"}]

WRITER = """
import asyncio, sys
from toolnexus.stores.sqlite import SqliteStore

async def main():
    async with SqliteStore(sys.argv[1]) as store:
        await store.save(sys.argv[2], [{"role": "user", "content": sys.argv[3]}])

asyncio.run(main())
"""

READER = """
import asyncio, json, sys
from toolnexus.stores.sqlite import SqliteStore

async def main():
    async with SqliteStore(sys.argv[1]) as store:
        print(json.dumps(await store.get(sys.argv[2])))

asyncio.run(main())
"""

LOCK_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE conversations SET updated_at = 0")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(db_path) as opened:
        yield opened


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _exists(path: Path) -> bool:
    return path.exists()


def _listdir(path: Path) -> list[Path]:
    return list(path.iterdir())


@contextmanager
def raw(path: Path) -> Generator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


async def python(script: str, *args: str, stdin: bytes | None = None) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), timeout=30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def seeded(path: Path, busy_timeout_ms: int = 5000) -> SqliteStore:
    store = SqliteStore(path, busy_timeout_ms=busy_timeout_ms)
    await store.save("c1", HELLO)
    return store


# -- durability ---------------------------------------------------------------------------


async def test_a_transcript_survives_closing_and_reopening(db_path: Path) -> None:
    async with SqliteStore(db_path) as first:
        await first.save("c1", HELLO)
    async with SqliteStore(db_path) as second:
        assert await second.get("c1") == HELLO


async def test_a_transcript_written_by_another_process_is_visible_here(
    store: SqliteStore, db_path: Path
) -> None:
    assert await store.get("c1") is None
    await python(WRITER, str(db_path), "c1", "from a child ✓")
    assert await store.get("c1") == [{"role": "user", "content": "from a child ✓"}]


async def test_a_transcript_written_here_is_visible_to_another_process(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save("c1", [{"role": "user", "content": "from the parent ✓"}])
    out = await python(READER, str(db_path), "c1")
    assert out == '[{"role": "user", "content": "from the parent \\u2713"}]\n'


async def test_an_in_memory_database_works_without_a_file(tmp_path: Path) -> None:
    async with SqliteStore(":memory:") as store:
        await store.save("c1", HELLO)
        assert await store.get("c1") == HELLO
    assert list(_listdir(tmp_path)) == []


async def test_opening_creates_nothing_until_first_use(db_path: Path) -> None:
    store = SqliteStore(db_path)
    assert not _exists(db_path)
    await store.aclose()
    assert not _exists(db_path)


# -- connection setup ---------------------------------------------------------------------


async def test_the_file_is_in_wal_mode(store: SqliteStore, db_path: Path) -> None:
    await store.save("c1", HELLO)
    with raw(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_the_connection_uses_normal_sync_foreign_keys_and_the_busy_timeout(
    db_path: Path,
) -> None:
    async with SqliteStore(db_path, busy_timeout_ms=1234) as store:
        pragmas = await store._call(  # pyright: ignore[reportPrivateUsage]
            lambda conn: [
                conn.execute(f"PRAGMA {name}").fetchone()[0]
                for name in ("synchronous", "foreign_keys", "busy_timeout")
            ]
        )
    assert pragmas == [1, 1, 1234]


async def test_every_call_runs_on_one_worker_thread_off_the_event_loop(
    store: SqliteStore,
) -> None:
    idents = await asyncio.gather(
        *(store._call(lambda _conn: threading.get_ident()) for _ in range(20))  # pyright: ignore[reportPrivateUsage]
    )
    assert len(set(idents)) == 1
    assert idents[0] != threading.get_ident()


async def test_every_call_reuses_one_connection(store: SqliteStore) -> None:
    conns = await asyncio.gather(*(store._call(id) for _ in range(5)))  # pyright: ignore[reportPrivateUsage]
    assert len(set(conns)) == 1


# -- migrations ---------------------------------------------------------------------------


async def test_migrations_are_recorded_once_across_reopens(db_path: Path) -> None:
    for _ in range(3):
        async with SqliteStore(db_path) as store:
            await store.get("c1")
    with raw(db_path) as conn:
        rows = conn.execute("SELECT version, name FROM schema_migrations").fetchall()
    assert rows == [(m.version, m.name) for m in MIGRATIONS]


async def test_two_stores_opening_a_fresh_file_at_once_migrate_it_once(db_path: Path) -> None:
    stores = [SqliteStore(db_path) for _ in range(4)]
    await asyncio.gather(*(s.save(f"c{i}", HELLO) for i, s in enumerate(stores)))
    await asyncio.gather(*(s.aclose() for s in stores))
    with raw(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone() == (
            len(MIGRATIONS),
        )
        assert conn.execute("SELECT count(*) FROM conversations").fetchone() == (4,)


def test_migrate_twice_on_one_connection_changes_nothing_the_second_time() -> None:
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        assert migrate(conn) == len(MIGRATIONS)
        before = conn.execute("SELECT * FROM schema_migrations").fetchall()
        assert migrate(conn) == len(MIGRATIONS)
        assert conn.execute("SELECT * FROM schema_migrations").fetchall() == before


def test_each_migration_stamps_its_version_in_the_file_header() -> None:
    steps = [
        Migration(version=1, name="one", statements=("CREATE TABLE a (x)",)),
        Migration(version=2, name="two", statements=("ALTER TABLE a ADD COLUMN y",)),
    ]
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        migrate(conn, steps[:1])
        assert stamped_version(conn) == 1
        migrate(conn, steps)
        assert stamped_version(conn) == 2 == schema_version(conn)


def test_a_migration_that_fails_leaves_neither_its_row_nor_its_stamp() -> None:
    steps = [
        Migration(version=1, name="one", statements=("CREATE TABLE a (x)",)),
        Migration(version=2, name="two", statements=("CREATE TABLE a (x)",)),  # exists: fails
    ]
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        with pytest.raises(sqlite3.OperationalError, match="already exists"):
            migrate(conn, steps)
        assert (schema_version(conn), stamped_version(conn)) == (1, 1)


async def test_a_current_file_that_lacks_the_stamp_is_stamped_at_open(db_path: Path) -> None:
    # A file migrated by a build from before the stamp: same schema, header left at 0.
    await (await seeded(db_path)).aclose()
    with raw(db_path) as conn:
        conn.execute("PRAGMA user_version = 0")
        before = conn.execute("SELECT * FROM schema_migrations").fetchall()
    async with SqliteStore(db_path) as store:
        assert await store.get("c1") == HELLO
    with raw(db_path) as conn:
        assert stamped_version(conn) == len(MIGRATIONS)
        assert conn.execute("SELECT * FROM schema_migrations").fetchall() == before


async def test_a_read_only_file_without_the_stamp_still_migrates_as_current(
    db_path: Path,
) -> None:
    await (await seeded(db_path)).aclose()
    with raw(db_path) as conn:
        conn.execute("PRAGMA user_version = 0")
    with closing(
        sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, isolation_level=None)
    ) as conn:
        assert migrate(conn) == len(MIGRATIONS)  # the stamp could not be written: no error
        assert stamped_version(conn) == 0


def test_migrations_apply_in_order_each_recorded_with_its_name() -> None:
    steps = [
        Migration(version=1, name="one", statements=("CREATE TABLE a (x)",)),
        Migration(version=2, name="two", statements=("ALTER TABLE a ADD COLUMN y",)),
    ]
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        migrate(conn, steps)
        names = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
        assert names.fetchall() == [(1, "one"), (2, "two")]
        columns = [row[1] for row in conn.execute("PRAGMA table_info(a)")]
        assert columns == ["x", "y"]


def test_a_later_migration_is_applied_to_a_database_at_an_older_version() -> None:
    first = Migration(version=1, name="one", statements=("CREATE TABLE a (x)",))
    second = Migration(version=2, name="two", statements=("CREATE TABLE b (x)",))
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        migrate(conn, [first])
        assert migrate(conn, [first, second]) == 2
        assert schema_version(conn) == 2


def test_a_failing_migration_is_rolled_back_whole_and_not_recorded() -> None:
    steps = [
        Migration(version=1, name="one", statements=("CREATE TABLE a (x)",)),
        Migration(version=2, name="bad", statements=("CREATE TABLE b (x)", "NOT SQL")),
    ]
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        with pytest.raises(sqlite3.Error):
            migrate(conn, steps)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "b" not in tables
        assert schema_version(conn) == 1
        assert not conn.in_transaction


def test_a_misnumbered_migration_list_is_refused() -> None:
    steps = [Migration(version=2, name="two", statements=("CREATE TABLE a (x)",))]
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        with pytest.raises(ValueError, match="expected 1"):
            migrate(conn, steps)
        assert schema_version(conn) == 0


async def test_a_database_from_a_newer_toolnexus_is_refused_and_left_alone(
    db_path: Path,
) -> None:
    await (await seeded(db_path)).aclose()
    with raw(db_path) as conn:  # what a newer toolnexus's migration leaves: its row, its stamp
        conn.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)")
        conn.execute("PRAGMA user_version = 99")
    before = _read(db_path)
    async with SqliteStore(db_path) as store:
        with pytest.raises(
            StoreError, match=rf"schema version 99, newer .* knows \({len(MIGRATIONS)}\)"
        ):
            await store.get("c1")
    assert _read(db_path) == before


# -- failures -----------------------------------------------------------------------------


async def test_a_write_while_another_process_holds_the_lock_is_a_store_error(
    db_path: Path,
) -> None:
    store = await seeded(db_path, busy_timeout_ms=20)
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        LOCK_HOLDER,
        str(db_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert await asyncio.wait_for(holder.stdout.readline(), timeout=30) == b"locked\n"
        with pytest.raises(StoreError, match="is locked by another connection"):
            await store.save("c1", [{"role": "user", "content": "lost"}])
    finally:
        await holder.communicate(b"go\n")
    assert await store.get("c1") == HELLO
    await store.aclose()


async def test_the_store_works_again_once_the_lock_is_released(db_path: Path) -> None:
    store = await seeded(db_path, busy_timeout_ms=10)
    with raw(db_path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="locked"):
            await store.save("c1", [])
        conn.execute("ROLLBACK")
    await store.save("c1", [{"role": "user", "content": "after"}])
    assert await store.get("c1") == [{"role": "user", "content": "after"}]
    await store.aclose()


async def test_an_open_blocked_by_a_lock_fails_cleanly_and_is_retried_later(
    db_path: Path,
) -> None:
    with raw(db_path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE squatter (x)")
        async with SqliteStore(db_path, busy_timeout_ms=10) as store:
            with pytest.raises(StoreError, match="locked"):
                await store.get("c1")
            conn.execute("COMMIT")
            assert await store.get("c1") is None


async def test_a_file_that_is_not_a_database_is_a_store_error_and_untouched(
    db_path: Path,
) -> None:
    _write(db_path, b"definitely not sqlite\n" * 200)
    async with SqliteStore(db_path) as store:
        with pytest.raises(StoreError, match="not a SQLite database or is corrupt"):
            await store.get("c1")
    assert _read(db_path) == b"definitely not sqlite\n" * 200


async def test_a_malformed_database_is_a_store_error(db_path: Path) -> None:
    async with SqliteStore(db_path) as store:
        for index in range(50):
            await store.save(f"c{index}", [{"role": "user", "content": "x" * 500}])
    with raw(db_path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'conversations'"
        ).fetchone()[0]
    data = bytearray(_read(db_path))
    start = (root - 1) * page_size
    data[start : start + page_size] = b"\xab" * page_size
    _write(db_path, bytes(data))
    async with SqliteStore(db_path) as store:
        with pytest.raises(StoreError, match="corrupt"):
            await store.get("c1")


async def test_a_path_in_a_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "missing" / "state.db") as store:
        with pytest.raises(StoreError, match="cannot open"):
            await store.save("c1", HELLO)
    assert not _exists(tmp_path / "missing")


async def test_a_directory_as_the_path_is_a_store_error(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path) as store:
        with pytest.raises(StoreError, match="cannot open"):
            await store.get("c1")


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ("{not json", "invalid JSON"),
        ('{"role": "user"}', "not a JSON array of message objects"),
        ('["text"]', "not a JSON array of message objects"),
        ("[" * 100_000, "invalid JSON"),
        (42, "not a JSON array of message objects"),
        (b"\xff\xfe binary", "invalid JSON"),
    ],
)
async def test_a_hand_edited_row_is_a_store_error_and_the_file_is_untouched(
    db_path: Path, stored: object, message: str
) -> None:
    await (await seeded(db_path)).aclose()
    with raw(db_path) as conn:
        conn.execute("UPDATE conversations SET messages = ? WHERE id = 'c1'", (stored,))
    before = _read(db_path)
    async with SqliteStore(db_path) as store:
        with pytest.raises(StoreError, match=message):
            await store.get("c1")
        assert await store.get("other") is None
    assert _read(db_path) == before


async def test_store_errors_chain_the_sqlite_cause(db_path: Path) -> None:
    _write(db_path, b"x" * 4096)
    async with SqliteStore(db_path) as store:
        with pytest.raises(StoreError) as caught:
            await store.get("c1")
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)


# -- lifecycle ----------------------------------------------------------------------------


async def test_a_closed_store_refuses_calls(db_path: Path) -> None:
    store = await seeded(db_path)
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await store.get("c1")


async def test_aclose_is_idempotent(db_path: Path) -> None:
    store = await seeded(db_path)
    await store.aclose()
    await store.aclose()


async def test_the_context_manager_closes_the_store(db_path: Path) -> None:
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)
    with pytest.raises(StoreError, match="closed"):
        await store.save("c1", HELLO)


async def test_closing_stops_the_worker_thread(db_path: Path) -> None:
    store = await seeded(db_path)
    worker = await store._call(lambda _conn: threading.current_thread())  # pyright: ignore[reportPrivateUsage]
    await store.aclose()
    worker.join(timeout=10)
    assert not worker.is_alive()


async def test_an_abandoned_store_releases_its_thread_when_collected(db_path: Path) -> None:
    store = await seeded(db_path)
    worker = await store._call(lambda _conn: threading.current_thread())  # pyright: ignore[reportPrivateUsage]
    del store
    gc.collect()
    worker.join(timeout=10)
    assert not worker.is_alive()


async def test_a_cancelled_call_leaves_the_store_usable(store: SqliteStore) -> None:
    task = asyncio.create_task(store.save("c1", HELLO))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await store.save("c2", HELLO)
    assert await store.get("c2") == HELLO


async def test_the_store_is_usable_from_a_second_event_loop(db_path: Path) -> None:
    store = await seeded(db_path)

    def in_another_loop() -> object:
        return asyncio.run(store.get("c1"))

    assert await asyncio.to_thread(in_another_loop) == HELLO
    await store.aclose()


@pytest.mark.parametrize("timeout", [-1, 1.5, "100", None, True])
def test_a_bad_busy_timeout_is_a_usage_error(db_path: Path, timeout: object) -> None:
    with pytest.raises(UsageError, match="busy_timeout_ms"):
        SqliteStore(db_path, busy_timeout_ms=timeout)  # pyright: ignore[reportArgumentType]

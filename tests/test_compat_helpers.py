"""The COMPAT §0 helpers in `toolnexus._compat`, which every compatibility shim builds on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from toolnexus import CallbackError, UsageError
from toolnexus._compat import (
    CallbackTypeError,
    MappingRecord,
    SelfAwaitable,
    UsageNotImplementedError,
    UsageRuntimeError,
    UsageTypeError,
    dual_error,
    reorder_positional,
    warn_once,
    warn_stderr,
)


class Loaded(SelfAwaitable):
    def __init__(self, value: int) -> None:
        self.value = value


async def test_a_self_awaitable_awaits_to_itself_without_suspending() -> None:
    thing = Loaded(3)
    assert await thing is thing
    assert (await Loaded(4)).value == 4


def test_a_self_awaitable_also_works_from_a_fresh_loop() -> None:
    thing = Loaded(5)

    async def use() -> Loaded:
        return await thing

    assert asyncio.run(use()) is thing


@pytest.mark.parametrize(
    ("cls", "builtin", "ours"),
    [
        (UsageTypeError, TypeError, UsageError),
        (UsageNotImplementedError, NotImplementedError, UsageError),
        (UsageRuntimeError, RuntimeError, UsageError),
        (CallbackTypeError, TypeError, CallbackError),
    ],
)
def test_the_dual_errors_are_both_types(
    cls: type[Exception], builtin: type[Exception], ours: type[Exception]
) -> None:
    error = cls("the package's words")
    assert isinstance(error, builtin)
    assert isinstance(error, ours)
    assert str(error) == "the package's words"
    assert dual_error(ours, builtin) is cls


def test_dual_error_makes_one_class_per_pair() -> None:
    first = dual_error(CallbackError, RuntimeError)
    assert first is dual_error(CallbackError, RuntimeError)
    assert issubclass(first, CallbackError)
    assert issubclass(first, RuntimeError)
    assert dual_error(UsageError, ValueError) is UsageError  # already both
    with pytest.raises(TypeError, match="not a toolnexus error"):
        dual_error(KeyError, TypeError)


@dataclass(slots=True, eq=False)
class Rec(MappingRecord):
    _mapping_keys: ClassVar[tuple[str, ...]] = ("name", "size")

    name: str
    size: int
    id: str = ""


def test_a_mapping_record_reads_and_compares_like_the_dict() -> None:
    rec = Rec("a", 3, id="x")
    assert rec["name"] == "a"
    assert rec.get("size") == 3
    assert rec.get("id") is None
    assert rec.get("nope", 9) == 9
    assert "name" in rec
    assert "id" not in rec
    assert list(rec) == ["name", "size"]
    assert list(rec.items()) == [("name", "a"), ("size", 3)]
    assert len(rec) == 2
    assert dict(rec) == {"name": "a", "size": 3}
    assert rec == {"name": "a", "size": 3}
    assert {"name": "a", "size": 3} == rec  # noqa: SIM300 - the reflected comparison is the point
    assert rec != {"name": "a", "size": 4}
    assert rec != {"name": "a", "size": 3, "id": "x"}
    with pytest.raises(KeyError):
        rec["id"]


def test_two_records_compare_by_every_field_and_stay_unhashable() -> None:
    assert Rec("a", 3, "x") == Rec("a", 3, "x")
    assert Rec("a", 3, "x") != Rec("a", 3, "y")  # the attribute-only field counts between records
    with pytest.raises(TypeError):
        hash(Rec("a", 3))
    with pytest.raises(TypeError):
        Rec("a", 3)["name"] = "b"  # type: ignore[index]  # pyright: ignore[reportIndexIssue]


def test_reorder_positional_maps_the_package_order() -> None:
    order = ("name", "location", "content", "description")
    assert reorder_positional(order, ("n", "/l"), {"content": "c"}, where="SkillInfo") == {
        "name": "n",
        "location": "/l",
        "content": "c",
    }
    with pytest.raises(TypeError, match="at most 4 positional") as many:
        reorder_positional(order, (1, 2, 3, 4, 5), {}, where="SkillInfo")
    assert isinstance(many.value, UsageError)
    with pytest.raises(TypeError, match="multiple values for argument 'name'"):
        reorder_positional(order, ("n",), {"name": "m"}, where="SkillInfo")


def test_warnings_go_to_stderr_with_the_package_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    warn_stderr("something odd")
    key: Any = object()
    assert warn_once(key, "only once") is True
    assert warn_once(key, "only once") is False
    err = capsys.readouterr().err
    assert err.splitlines() == ["[toolnexus] something odd", "[toolnexus] only once"]

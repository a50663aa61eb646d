"""JournalMemory and MutationJournal: temporal recall over the run's history."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agentkit.kernel import Ctx, InvalidArgument, InvalidArgumentType, Scope
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import CompositeMemory, JournalMemory, MemoryItem, MemorySource
from agentkit.state.memory._protocol import accepts_writes


def ctx() -> Ctx:
    return Ctx(Scope("acme", "support"))


@dataclass
class Turn:
    role: str
    text: str


@dataclass
class Event:
    id: int
    text: str


def journal_of(*turns: Turn) -> MutationJournal[Turn]:
    journal: MutationJournal[Turn] = MutationJournal()
    for turn in turns:
        journal.record(turn)
    return journal


TURNS = (
    Turn("user", "My order #12 never arrived"),
    Turn("assistant", "Sorry! Let me check order #12"),
    Turn("tool", "order #12: shipped 3 days ago"),
    Turn("assistant", "It shipped three days ago"),
    Turn("user", "Thanks, and my REFUND?"),
)


def memory(*turns: Turn) -> JournalMemory[Turn]:
    return JournalMemory(journal_of(*(turns or TURNS)), render=lambda t: f"{t.role}: {t.text}")


def test_mutation_journal_is_ordered_append_only_and_hands_out_copies() -> None:
    journal = journal_of(*TURNS)
    assert len(journal) == 5
    entries = journal.entries()
    assert entries == list(TURNS)
    entries.clear()
    assert len(journal.entries()) == 5


def test_defaults_and_protocol() -> None:
    jm = memory()
    assert jm.name == "journal"
    assert isinstance(jm, MemorySource)
    assert accepts_writes(jm) is False


async def test_returns_the_k_most_recent_newest_first_unscored() -> None:
    items = await memory().query("", k=2, ctx=ctx())
    assert [i.content for i in items] == [
        "user: Thanks, and my REFUND?",
        "assistant: It shipped three days ago",
    ]
    assert all(i.score is None and i.source == "journal" for i in items)


async def test_filter_runs_before_the_recency_cut() -> None:
    # The only match is the OLDEST entry; cutting first would lose it.
    items = await memory().query("never arrived", k=1, ctx=ctx())
    assert [i.content for i in items] == ["user: My order #12 never arrived"]


async def test_filter_is_a_case_insensitive_substring_of_the_rendered_text() -> None:
    assert [i.content for i in await memory().query("refund", k=5, ctx=ctx())] == [
        "user: Thanks, and my REFUND?"
    ]
    # The role is part of the rendering, so it matches too.
    assert len(await memory().query("ASSISTANT:", k=5, ctx=ctx())) == 2
    assert await memory().query("nothing like this", k=5, ctx=ctx()) == []


async def test_where_role_keeps_matching_roles_and_skips_entries_without_one() -> None:
    journal: MutationJournal[object] = MutationJournal()
    for entry in (
        Turn("user", "a"),
        Event(1, "no role"),
        Turn("assistant", "b"),
        Turn("user", "c"),
    ):
        journal.record(entry)
    jm: JournalMemory[object] = JournalMemory(journal, render=lambda e: e.text)  # type: ignore[attr-defined]
    assert [i.content for i in await jm.query("", k=5, ctx=ctx(), where={"role": "user"})] == [
        "c",
        "a",
    ]
    both = await jm.query("", k=5, ctx=ctx(), where={"role": ["user", "assistant"]})
    assert [i.content for i in both] == ["c", "b", "a"]
    assert [i.content for i in await jm.query("", k=5, ctx=ctx())] == ["c", "b", "no role", "a"]


async def test_where_keys_the_entries_lack_match_nothing_rather_than_fail() -> None:
    # A filter broadcast by a composite must neither be ignored nor break the fan-out.
    assert await memory().query("", k=5, ctx=ctx(), where={"topic": "x"}) == []


async def test_where_compares_any_entry_attribute() -> None:
    events: MutationJournal[Event] = MutationJournal()
    events.record(Event(101, "first"))
    events.record(Event(102, "second"))
    em = JournalMemory(events, render=lambda e: e.text)
    assert [i.id for i in await em.query("", k=5, ctx=ctx(), where={"id": 101})] == ["101"]


async def test_ids_come_from_the_entry_or_its_position() -> None:
    items = await memory().query("", k=5, ctx=ctx())
    assert [i.id for i in items] == ["4", "3", "2", "1", "0"]
    events: MutationJournal[Event] = MutationJournal()
    events.record(Event(101, "first"))
    events.record(Event(102, "second"))
    em = JournalMemory(events, render=lambda e: e.text)
    assert [i.id for i in await em.query("", k=5, ctx=ctx())] == ["102", "101"]


async def test_metadata_carries_position_and_role() -> None:
    (item,) = await memory().query("refund", k=1, ctx=ctx())
    assert item.metadata == {"index": 4, "role": "user"}


async def test_write_is_a_no_op_and_the_journal_is_untouched() -> None:
    jm = memory()
    await jm.write([MemoryItem("injected", "user")], ctx=ctx())
    assert len(jm.journal) == 5
    # A composite holding only this member knows nothing can commit.
    assert CompositeMemory([jm]).accepts_writes is False


async def test_sees_entries_recorded_after_construction() -> None:
    jm = memory()
    jm.journal.record(Turn("user", "brand new"))
    assert (await jm.query("", k=1, ctx=ctx()))[0].content == "user: brand new"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"k": 0}, InvalidArgument),
        ({"k": None}, InvalidArgumentType),
        ({"query": None}, InvalidArgumentType),
        ({"where": ["role"]}, InvalidArgumentType),
    ],
)
async def test_bad_arguments_are_refused(kwargs: dict[str, object], error: type) -> None:
    call: dict[str, object] = {"query": "", "k": 2, "ctx": ctx(), **kwargs}
    with pytest.raises(error):
        await memory().query(call.pop("query"), **call)  # type: ignore[arg-type]

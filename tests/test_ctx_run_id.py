"""A Ctx's default run id: a fresh version-4 UUID in hex, as traces expect to join on."""

from __future__ import annotations

import uuid

from agentkit.kernel import Ctx, Scope


def test_the_default_run_id_is_a_version_4_uuid_hex() -> None:
    for _ in range(2000):
        run_id = Ctx(Scope("acme", "support")).run_id
        parsed = uuid.UUID(hex=run_id)
        assert parsed.hex == run_id  # 32 lowercase hex digits, no dashes
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_every_ctx_gets_its_own_run_id_and_timeline() -> None:
    ctxs = [Ctx() for _ in range(10_000)]
    assert len({c.run_id for c in ctxs}) == len(ctxs)
    assert len({id(c.timeline) for c in ctxs}) == len(ctxs)


def test_a_given_run_id_is_kept() -> None:
    assert Ctx(run_id="run-7").run_id == "run-7"

"""A Ctx's default run id: a fresh version-4 UUID in hex, as traces expect to join on."""

from __future__ import annotations

import sys
import threading
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


def test_observations_from_many_threads_all_land_in_each_threads_order() -> None:
    ctx = Ctx()
    per_thread = 3_000
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython allows
    try:
        threads = [
            threading.Thread(
                target=lambda t=t: [ctx.observe("step", thread=t, n=n) for n in range(per_thread)]
            )
            for t in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    seen = list(ctx.timeline)
    assert len(seen) == len(ctx.timeline) == 8 * per_thread
    for t in range(8):
        assert [o.data["n"] for o in seen if o.data["thread"] == t] == list(range(per_thread))
    assert len(ctx.timeline.of("step")) == 8 * per_thread

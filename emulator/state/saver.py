"""Writing what changed, a little at a time, without holding up requests.

Every :data:`INTERVAL` the saver skips the tenants whose O(1) signature did not move, and
for the others encodes only the records whose fingerprint changed. It hands the loop back
every :data:`STEP_SECONDS`, so a request waits for one step at most, and the writer thread
(:class:`~emulator.state.database.Writer`) commits while requests are served.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator
from typing import Any

from emulator.state import encode, schema
from emulator.state.database import Rows, Statement, Writer
from emulator.tenants.tenants import Tenant, TenantRegistry

INTERVAL = 0.25  # seconds between the end of one save and the start of the next
# Work done on the event loop before handing it back. Each hand-back lets the loop serve
# the requests waiting (about 2 ms of them at 16 connections), so a step adds its length
# to their wait: 0.5 ms held the scale benchmark's --state p99 at 6-8 ms where 2 ms gave 6-16.
STEP_SECONDS = 0.0005
JOURNAL_STEP = 8  # journal entries rendered (masked) per step at most (about 30 µs each)
log = logging.getLogger("payemu")
_MISSING = object()


def signature(owner: Tenant) -> tuple[Any, ...]:
    """Changes whenever a request changed the tenant (cheap: no store is walked)."""
    ledger, vault, journal, overrides = owner.ledger, owner.vault, owner.journal, owner.overrides
    return (
        getattr(owner, "last_used", None),
        len(ledger),
        ledger.token_count,
        len(vault),
        vault.bytes,
        len(owner.sessions),
        journal.newest_id(),
        owner.clock.offset,
        len(owner.accounts),
        len(owner.certificates),
        len(owner.rules),
        overrides.strict,
        overrides.success_status,
        overrides.failover,
    )


def _stores(owner: Tenant) -> tuple[int, ...]:
    """Which store objects the tenant holds (a reset replaces them all)."""
    return tuple(map(id, (owner.ledger, owner.vault, owner.sessions, owner.journal, owner.clock, owner.rules)))


class Track:
    """What the file holds of one tenant."""

    def __init__(self, owner: Tenant) -> None:
        self.owner = owner
        self.stores = _stores(owner)
        self.signature: tuple[Any, ...] | None = None
        self.head = ""
        self.prints: dict[str, dict[str, Hashable]] = {kind: {} for kind in schema.KINDS}
        self.journal_newest = 0
        self.journal_oldest = 0
        self.walked: set[str] = set()  # kinds compared in full once; since then only what their store noted
        self.settling: set[str] = set()  # transactions with a settlement to come (it changes them unnoted)


class Saver:
    """Finds what changed since the last save and has the writer commit it."""

    def __init__(self, registry: TenantRegistry, writer: Writer) -> None:
        self.registry = registry
        self.writer = writer
        self.tracks: dict[str, Track] = {}
        self.wipe = False  # after a failed save: rewrite every tenant from scratch
        self.longest_step = 0.0  # seconds: the longest the loop was held by a save (wall clock)
        self.longest_step_cpu = 0.0  # the same step's CPU time (the wall clock counts other processes too)
        self._started = 0.0
        self._started_cpu = 0.0

    async def seed(self, loaded: Iterable[Tenant]) -> None:
        """Note the tenants just read from the file as written (so they are not rewritten)."""
        self._start_step()
        await self._scan_all(loaded, [], emit=False)
        self._step_done()

    def leftovers(self, loaded: Iterable[Tenant]) -> list[Statement]:
        """Deletes of the rows the file holds for the ``loaded`` tenants (just seeded)
        beyond what they hold: what loading dropped for the bounds."""
        out: list[Statement] = []
        for owner in loaded:
            track = self.tracks[owner.key]
            for kind, prints in track.prints.items():
                out.append((schema.DELETE_RECORDS_BUT, [(owner.key, kind, json.dumps(list(prints)))]))
            oldest = owner.journal.oldest_id() or 1 << 62  # an empty journal: every entry goes
            out.append((schema.DROP_ENTRIES_BEFORE, [(owner.key, oldest)]))
        return out

    async def save(self) -> int:
        """One save: collect the changes, commit them; returns the statements' row count."""
        statements = await self.collect()
        if not statements:
            return 0
        try:
            await asyncio.wrap_future(self.writer.submit(statements))
        except BaseException:
            self.tracks.clear()  # what the file holds is unknown now: write it all again
            self.wipe = True
            raise
        self.wipe = False
        return sum(len(rows) for _, rows in statements)

    async def collect(self) -> list[Statement]:
        out: list[Statement] = []
        live = {owner.key: owner for owner in self.registry}
        # a tenant whose save did not land is left as the file has it (it answers 503)
        stuck = [key for key, owner in live.items() if owner.unsaved is not None]
        if self.wipe:
            out += [(sql, [(json.dumps(stuck),)]) for sql in schema.DELETE_ALL_BUT]
        self._start_step()
        for key in [key for key in self.tracks if key not in live]:
            del self.tracks[key]
            out += [(sql, [(key,)]) for sql in schema.DELETE_TENANT]
        await self._scan_all([owner for owner in live.values() if owner.unsaved is None], out, emit=True)
        self._step_done()
        return out

    async def _scan_all(self, owners: Iterable[Tenant], out: list[Statement], *, emit: bool) -> None:
        for owner in owners:
            await self._scan(owner, out, emit=emit)
            if self._due():  # a tenant that did not change costs a few µs: there may be thousands
                await self._pause()

    def _due(self) -> bool:
        """Whether the step under way has had its :data:`STEP_SECONDS`."""
        return time.perf_counter() - self._started > STEP_SECONDS

    async def _pause(self) -> None:
        self._step_done()
        await asyncio.sleep(0)
        self._start_step()

    def _start_step(self) -> None:
        self._started = time.perf_counter()
        self._started_cpu = time.thread_time()

    def _step_done(self) -> None:
        self.longest_step = max(self.longest_step, time.perf_counter() - self._started)
        self.longest_step_cpu = max(self.longest_step_cpu, time.thread_time() - self._started_cpu)

    async def _scan(self, owner: Tenant, out: list[Statement], *, emit: bool) -> None:
        key = owner.key
        track = self.tracks.get(key)
        if track is not None and (track.owner is not owner or track.stores != _stores(owner)):
            out += [(sql, [(key,)]) for sql in schema.DELETE_TENANT]  # reset or replaced: start over
            track = None
        if track is None:
            track = self.tracks[key] = Track(owner)
        now = signature(owner)
        if now == track.signature:
            return
        track.signature = now  # taken first: a change made while scanning shows next time
        head = encode.text(encode.tenant(owner))
        if head != track.head:
            track.head = head
            if emit:
                out.append((schema.UPSERT_TENANT, [(key, head)]))
        ledger, vault, sessions = owner.ledger, owner.vault, owner.sessions
        noted, ledger.changed = ledger.changed, {}
        # a settlement changes a transaction unnoted: those still to settle are compared each time
        track.settling = await self._records(
            track, schema.TRANSACTION, noted, ledger, ledger.get, encode.transaction_print, encode.transaction, out,
            emit, also=track.settling, pending=ledger.settles,
        )  # fmt: skip
        tokens = {token.token: token for token in ledger.gateway_tokens()}
        await self._records(
            track, schema.GATEWAY_TOKEN, None, tokens, tokens.get, _itself, encode.gateway_token, out, emit
        )
        noted, vault.changed = vault.changed, {}
        await self._records(
            track, schema.STRING_TOKEN, noted, vault, vault.get, _itself, encode.string_token, out, emit
        )
        await self._records(
            track, schema.SESSION, None, sessions, sessions.get, encode.session_print, encode.session, out, emit
        )
        await self._journal(track, out, emit)

    async def _records(
        self,
        track: Track,
        kind: str,
        noted: dict[str, None] | None,
        held: Collection[str],
        find: Callable[[str], Any],
        fingerprint: Callable[[Any], Hashable],
        encoder: Callable[[Any], dict[str, Any] | None],
        out: list[Statement],
        emit: bool,
        also: Iterable[str] = (),
        pending: Callable[[str], bool] | None = None,
    ) -> set[str]:
        """Write the records of one kind that changed since the last save and delete those
        gone. With ``noted`` (what the store noted as added, changed or gone since the saver
        last took it, in that order) only those and ``also`` are compared; without it (a
        store that notes nothing, or the first save of a tenant) every record ``held`` is,
        in the store's order (oldest first: the file keeps it), and then every one written
        before is looked for. Each record's fingerprint is compared with the one written
        last; only changed records are encoded. Returns the idents compared that are still
        ``pending`` (asked in the same steps: thousands of changes asked at once held the
        loop for 4-7 ms)."""
        key = track.owner.key
        prints = track.prints[kind]
        if noted is None or kind not in track.walked:
            track.walked.add(kind)
            # copies (both change while the loop is handed back): every record held, then
            # every one written, of which only those gone now are looked at
            idents: Iterator[tuple[str, bool]] = itertools.chain(
                zip(list(held), itertools.repeat(False)), zip(list(prints), itertools.repeat(True))
            )
        else:
            later = (ident for ident in also if ident not in noted)
            idents = zip(itertools.chain(noted, later), itertools.repeat(False))
        upserts, deletes, still = Rows(4), Rows(3), set()
        for ident, only_gone in idents:
            if self._due():
                await self._pause()
            if only_gone and ident in held:
                continue  # compared in the first pass (``find`` may unpack a transaction)
            item = find(ident)
            if item is None:
                if prints.pop(ident, _MISSING) is not _MISSING and emit:
                    deletes.add(key, kind, ident)
                continue
            mark = fingerprint(item)
            old = prints.get(ident, _MISSING)
            if old is not mark and old != mark:
                if emit:
                    document = encoder(item)
                    if document is None:  # not kept at rest (a token holding only a security code)
                        continue
                    upserts.add(key, kind, ident, encode.text(document))
                prints[ident] = mark
            if pending is not None and pending(ident):
                still.add(ident)
        if deletes:
            out.append((schema.DELETE_RECORD, deletes))
        if upserts:
            out.append((schema.UPSERT_RECORD, upserts))
        return still

    async def _journal(self, track: Track, out: list[Statement], emit: bool) -> None:
        journal = track.owner.journal
        key = track.owner.key
        oldest = journal.oldest_id()
        if emit and oldest > track.journal_oldest:
            out.append((schema.DROP_ENTRIES_BEFORE, [(key, oldest)]))
        track.journal_oldest = oldest
        if not emit:  # the entries just read from the file: nothing to render
            track.journal_newest = journal.newest_id()
            return
        # the entries held now, and no later ones: under a load that records entries faster
        # than steps render them, a save that chased the newest never ended (the next save
        # takes what came meanwhile)
        last = journal.newest_id()
        while True:
            if self._due():  # what came before took the step: the entries start their own
                await self._pause()
            entries = journal.entries_after(track.journal_newest, JOURNAL_STEP, until=last)
            if not entries:
                return
            if emit:
                rows = Rows(3)
                for entry in entries:
                    rows.add(key, entry["id"], encode.text(entry))
                out.append((schema.UPSERT_ENTRY, rows))
            track.journal_newest = int(entries[-1]["id"])
            if journal is not track.owner.journal:
                return
            await self._pause()


def _itself(item: Hashable) -> Hashable:
    return item

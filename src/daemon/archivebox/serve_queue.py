"""One turn of abxd serving an ArchiveBox collection's queue (`[archivebox] serve_queue`).

abxd's daemon runs this with ArchiveBox's own Python, in the collection, as its owner: the
program arrives on standard input, with the turn's facts (what abxd holds and how far it got)
at its end. It writes ArchiveBox's rows with ArchiveBox's own model methods -- the writes
ArchiveBox's runner makes (`services/runner.py`, `services/crawl_service.py`,
`services/snapshot_service.py`, `services/archive_result_service.py`, `workers/models.py`) --
and prints what abxd must do as JSON lines on standard output:

  {"type": "claimed", "archivebox_crawl": ID, "user": NAME, "urls": [...], "depth": N,
   "tags": [...], "config": {...}, "persona": NAME|null, "plugins": [...]|null,
   "redo": [{"uuid": ID, "url": URL, "bookmarked_at": MS}, ...]}
                                                 a due Crawl claimed for abxd to run -- or,
                                                 with "redo", its Snapshots queued again (a
                                                 redo from ArchiveBox's UI: "plugins" those to
                                                 run again, null for all)
  {"type": "seen", "archivebox_crawl": ID, "status": S}   the Crawl's status after this turn
  {"type": "control", "archivebox_crawl": ID, "action": "pause"|"resume"|"cancel"}
                                                 a change made in ArchiveBox (its UI, its API)
  {"type": "mirrored", "archivebox_crawl": ID, "snapshot": UUID}
                                                 a sealed snapshot whole in ArchiveBox
  {"type": "released", "archivebox_crawl": ID}   the Crawl is sealed in ArchiveBox: let go
  {"type": "error", "message": TEXT}

Invariants: a Crawl is taken only by ArchiveBox's own compare-and-set on `retry_at`
(`claim_processing_lock`), and the lease of each Crawl and Snapshot abxd holds is renewed every
turn (turns come well inside `ACTIVE_STATE_LEASE_SECONDS`); a Snapshot queued again is claimed
as ArchiveBox's runner claims one (`_run_due_snapshot_locked`), a Crawl's at a time and one
set of plugins at a time (its other due Snapshots wait for the next claim), never one of a Crawl
abxd holds; every write is idempotent -- a turn
repeated after a crash, or cut off by one, leaves the same rows; a Snapshot's id is abxd's
snapshot UUID, a result is keyed by (snapshot, plugin, hook_name) as ArchiveBox keys it; nothing
abxd did not report is written; no snapshot directory is made here: abxd copies each snapshot it
sealed into the collection before the turn (`abxd worker export`, to the place ArchiveBox's
`Snapshot.output_dir` names, the Snapshot bookmarked when abxd made it), and only then is the
Snapshot sealed here.
"""
import json
import logging
import os
import sys
import traceback
import uuid
from datetime import datetime, timedelta, timezone as tz
from pathlib import Path


def hexid(value):
    """An id as ArchiveBox and abxd write it: 32 hex digits."""
    return value.hex if isinstance(value, uuid.UUID) else str(value).replace("-", "")


def say(**record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def moment(ms):
    """A datetime of abxd's Unix milliseconds (None stays None)."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=tz.utc)


def iso_moment(text):
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def setup():
    os.environ.setdefault("DATA_DIR", os.getcwd())
    from archivebox.config.django import setup_django

    setup_django()
    # Saving queue rows outside ArchiveBox's own runner logs a warning per save: this is the
    # collection's runner, standing in for it.
    logging.getLogger("archivebox.workers.models").setLevel(logging.ERROR)


# The key of `env` that marks abxd's daemon's row (its value: the daemon's start time).
ABXD_ROW = "ABXD_DAEMON"


def orchestrator_row(pid, data_dir, ahead):
    """abxd's daemon as the collection's runner, in ArchiveBox's runner gate
    (`core/takeover_util.py`): a RUNNING orchestrator Process row on this Machine, with the
    gate's own worker_type (`worker_runner`, one a collection by ArchiveBox's partial unique
    constraint) and the daemon's pid and command, which the UI's live progress
    (`progressmonitor/views.py`) looks for too. Returns the row, or None with the live runner of
    ArchiveBox's that holds the gate already (abxd takes no new work while it does).

    ArchiveBox's gate elects the newest live runner by `started_at or created_at`, and stops
    the older ones (`enter_single_runner_gate`): the row has no `started_at` and is kept created
    a day ahead of now (renewed every turn), so that any runner ArchiveBox starts -- `archivebox
    run`, `archivebox server`'s, a foreground `archivebox add` -- finds abxd newer, and exits
    or stands by, never signals it; `Process.is_running` still proves the row alive by its pid
    and command (without `started_at` it checks no start time), and once abxd's pid is gone
    ArchiveBox's own cleanup retires the row. The daemon's start time is kept in `env`, so that
    abxd tells its own row from an earlier daemon's."""
    import psutil
    from django.db import IntegrityError
    from archivebox.machine.models import Machine, Process

    machine = Machine.current()
    proc = psutil.Process(pid)
    started = str(proc.create_time())
    rows = Process.objects.filter(machine=machine, process_type=Process.TypeChoices.ORCHESTRATOR,
                                  status=Process.StatusChoices.RUNNING)
    mine = None
    for row in rows:
        if not ((row.env or {}).get(ABXD_ROW) or row.worker_type == "abxd"):
            continue
        if row.pid == pid and (row.env or {}).get(ABXD_ROW) == started and row.pwd == str(data_dir):
            mine = row
        else:
            # An earlier daemon's row (abxd was restarted, or an earlier version's): it runs no
            # more.
            row.status = Process.StatusChoices.EXITED
            row.ended_at = datetime.now(tz=tz.utc)
            row.exit_code = row.exit_code if row.exit_code is not None else 0
            row.save(update_fields=["status", "ended_at", "exit_code", "modified_at"])
    if mine is not None:
        Process.objects.filter(id=mine.id).update(created_at=ahead, modified_at=datetime.now(tz=tz.utc))
        return mine, None
    holders = (Process.objects.filter(machine=machine, process_type=Process.TypeChoices.ORCHESTRATOR,
                                      status=Process.StatusChoices.RUNNING, pwd=str(data_dir),
                                      worker_type="worker_runner"))
    for holder in holders:
        if holder.is_running:
            return None, holder
        # (A runner of ArchiveBox's that died without a word: as its gate retires it.)
        holder.mark_exited(exit_code=holder.exit_code if holder.exit_code is not None else 0)
    mine = Process(machine=machine, pid=pid, started_at=None, cmd=proc.cmdline(),
                   pwd=str(data_dir), process_type=Process.TypeChoices.ORCHESTRATOR,
                   worker_type="worker_runner", env={ABXD_ROW: started},
                   status=Process.StatusChoices.RUNNING, created_at=ahead)
    try:
        mine.save()
    except IntegrityError:
        # A runner of ArchiveBox's entered the gate meanwhile: the next turn names it.
        return None, None
    return mine, None


def hook_process_row(iface, process_id, *, pwd, url, cmd, timeout, started_at, pid=None,
                     ended=None):
    """The Process row of a hook abxd ran (its id abxd's process row's UUID), as abx-dl's
    ProcessService records one: RUNNING while it runs (ArchiveBox's UI matches it to its snapshot
    by its pwd, which holds the snapshot's id), EXITED with its end once it ended (`ended`:
    ended_at, exit_code, stdout, stderr)."""
    from archivebox.machine.models import Process

    fields = {"machine_id": iface.machine_id, "iface_id": iface.id, "process_type": Process.TypeChoices.HOOK,
              "pwd": str(pwd), "cmd": cmd, "timeout": timeout or 0, "url": url, "started_at": started_at,
              "retry_at": None}
    if pid:
        fields["pid"] = pid
    if ended:
        fields.update(ended, status=Process.StatusChoices.EXITED)
    else:
        fields["status"] = Process.StatusChoices.RUNNING
    row = Process.objects.filter(id=process_id).first()
    if row is None:
        row = Process(id=uuid.UUID(hex=process_id), **fields)
        row.save()
    elif row.status != Process.StatusChoices.EXITED:
        Process.objects.filter(id=row.id).update(**fields, modified_at=datetime.now(tz=tz.utc))
    return row


def index_runs(records):
    """The hook runs of abxd's `index.jsonl` records (the daemon reads them for this turn), by
    (plugin, hook_name): the last of each, its Process record and its ArchiveResult record."""
    runs = {}
    process = None
    for record in records:
        kind = record.get("type")
        if kind == "Process":
            process = record
        elif kind == "ArchiveResult":
            key = (record.get("plugin"), record.get("hook_name"))
            same = process if process and process.get("hook_name") == key[1] else None
            runs[key] = (same, record)
    return runs


def project_result(snapshot, plugin, hook_name, process, result, iface):
    """One ended hook run into its ArchiveResult, as `_save_archiveresult_event_to_db` does: its
    files as the run reported them, or -- once abxd copied the snapshot into the collection --
    as they lie in ArchiveBox's own snapshot directory."""
    from archivebox.core.models import ArchiveResult
    from archivebox.services.archive_result_service import (
        _extract_snapshot_title, _normalize_status, _resolve_output_metadata,
        _should_update_snapshot_title)

    plugin_dir = Path(snapshot.output_dir) / plugin
    status = result.get("status") or "failed"
    if status == "cancelled":
        # ArchiveBox withdraws a cancelled attempt rather than showing it failed.
        ArchiveResult.objects.filter(snapshot=snapshot, plugin=plugin, hook_name=hook_name).delete()
        return
    output_files, output_size, output_mimetypes = _resolve_output_metadata(result.get("output_files"), plugin_dir)
    started = iso_moment(process.get("started_at")) if process else None
    ended = iso_moment(process.get("ended_at")) if process else None
    process_row = None
    if process and process.get("id") and started:
        process_row = hook_process_row(
            iface, process["id"], pwd=plugin_dir, url=snapshot.url, cmd=process.get("cmd") or [],
            timeout=process.get("timeout"), started_at=started,
            ended={"ended_at": ended or datetime.now(tz=tz.utc), "exit_code": process.get("exit_code"),
                   "stdout": process.get("stdout") or "", "stderr": process.get("stderr") or ""})
    defaults = {
        "status": _normalize_status(status),
        "output_str": result.get("output_str") or "",
        "output_json": result.get("output_json"),
        "output_files": output_files,
        "output_size": output_size,
        "output_mimetypes": output_mimetypes,
        "start_ts": started or datetime.now(tz=tz.utc),
        "end_ts": ended or datetime.now(tz=tz.utc),
    }
    if result.get("error"):
        defaults["notes"] = result["error"]
    if process_row is not None:
        defaults["process_id"] = process_row.id
    row, _ = ArchiveResult.get_or_create_by_hook(snapshot, plugin, hook_name, defaults=defaults)
    changed = []
    row.snapshot = snapshot
    if row.set_delete_at_from_config():
        changed.append("delete_at")
    for field, value in defaults.items():
        if row.__dict__.get(field) != value:
            setattr(row, field, value)
            changed.append(field)
    if changed:
        row.save(update_fields=[*changed, "modified_at"])
    if row.status in (ArchiveResult.StatusChoices.SUCCEEDED, ArchiveResult.StatusChoices.NORESULTS):
        said = row.output_str if row.status == ArchiveResult.StatusChoices.SUCCEEDED else ""
        title = _extract_snapshot_title(str(plugin_dir.parent), plugin, said, snapshot_url=snapshot.url)
        if title and _should_update_snapshot_title(snapshot.title or "", title, snapshot_url=snapshot.url):
            snapshot.title = title
            snapshot.save(update_fields=["title", "modified_at"])


def mark_started(snapshot, plugin, hook_name, started_at, process_row):
    """A hook abxd started, as `mark_archiveresult_started` projects it."""
    from archivebox.core.models import ArchiveResult

    row, created = ArchiveResult.get_or_create_by_hook(
        snapshot, plugin, hook_name,
        defaults={"status": ArchiveResult.StatusChoices.STARTED, "start_ts": started_at,
                  "end_ts": None, "process_id": process_row.id})
    if created or (row.start_ts is not None and started_at <= row.start_ts):
        return
    row.status = ArchiveResult.StatusChoices.STARTED
    row.start_ts = started_at
    row.end_ts = None
    row.process_id = process_row.id
    row.save(update_fields=["status", "start_ts", "end_ts", "process_id", "modified_at"])


def withdraw_unfinished(snapshot, runs, running):
    """A result shown started whose hook abxd no longer runs and reported no end of -- it was
    interrupted, or cancelled with its crawl -- is withdrawn, as ArchiveBox withdraws a
    cancelled attempt (a rerun's start or its end shows it again at a later turn)."""
    from archivebox.core.models import ArchiveResult
    from archivebox.machine.models import Process

    live = {(hook["plugin"], hook["hook_name"]) for hook in running}
    for row in ArchiveResult.objects.filter(snapshot=snapshot, status=ArchiveResult.StatusChoices.STARTED):
        key = (row.plugin, row.hook_name)
        if key in runs or key in live:
            continue
        if row.process_id:
            Process.objects.filter(id=row.process_id, status=Process.StatusChoices.RUNNING).update(
                status=Process.StatusChoices.EXITED, ended_at=datetime.now(tz=tz.utc))
        ArchiveResult.objects.filter(id=row.id).delete()


def ensure_snapshot(crawl, fact, lease_until):
    """The Snapshot row of one of abxd's snapshots (its id abxd's UUID, bookmarked when abxd
    made it: so its directory is where abxd copies it), made as ArchiveBox's
    `create_snapshots_from_urls` makes one; `Snapshot.save` gives it the Crawl's tags."""
    from archivebox.core.models import Snapshot

    snapshot = Snapshot.objects.filter(id=fact["uuid"]).first()
    if snapshot is not None:
        return snapshot
    parent = Snapshot.objects.filter(id=fact["parent"]).first() if fact.get("parent") else None
    made = moment(fact["created_at"])
    queued = fact["status"] == "queued"
    # ArchiveBox's `timestamp` is unique: abxd makes a page's discoveries in one millisecond.
    stamp = made
    while Snapshot.objects.filter(timestamp=str(stamp.timestamp())).exists():
        stamp += timedelta(microseconds=1)
    snapshot = Snapshot(id=uuid.UUID(hex=fact["uuid"]), url=fact["url"], crawl=crawl, depth=fact["depth"],
                        parent_snapshot=parent, created_at=made, bookmarked_at=made,
                        timestamp=str(stamp.timestamp()),
                        status=Snapshot.INITIAL_STATE if queued else Snapshot.StatusChoices.STARTED,
                        retry_at=made if queued else lease_until)
    snapshot.save()
    snapshot.refresh_from_db()
    return snapshot


def retry_plugins(snapshot):
    """The plugins a sealed Snapshot was asked to run again (`schedule_plugin_run`)."""
    if snapshot.status != "sealed":
        return []
    return sorted({str(name).strip() for name in (snapshot.config or {}).get("RETRY_PLUGINS", []) if str(name).strip()})


def let_go_of_redo(snapshot):
    """A redo of a Snapshot is over (done, or refused): sealed, its request to run plugins
    again dropped and its claim let go of."""
    from archivebox.core.models import Snapshot

    snapshot.refresh_from_db()
    if snapshot.status != Snapshot.StatusChoices.SEALED:
        snapshot.seal()
        snapshot.refresh_from_db()
    config = {key: value for key, value in (snapshot.config or {}).items() if key != "RETRY_PLUGINS"}
    Snapshot.objects.filter(id=snapshot.id, status=Snapshot.StatusChoices.SEALED).update(
        config=config, retry_at=None, modified_at=datetime.now(tz=tz.utc))
    snapshot.refresh_from_db()


def project_snapshot(crawl, fact, iface, lease_until):
    """One of abxd's snapshots into ArchiveBox: its row, its results, and -- once abxd sealed
    it -- its seal, as `finalize_completed_snapshot` seals one. True once it is whole there."""
    from archivebox.core.models import Snapshot

    snapshot = ensure_snapshot(crawl, fact, lease_until)
    runs = index_runs(fact.get("records", []))
    for (plugin, hook_name), (process, result) in runs.items():
        if plugin and hook_name:
            project_result(snapshot, plugin, hook_name, process, result, iface)
    for running in fact.get("running", []):
        if (running["plugin"], running["hook_name"]) in runs:
            continue
        started_at = moment(running["started_at"])
        row = hook_process_row(iface, running["process_id"], pwd=Path(snapshot.output_dir) / running["plugin"],
                               url=snapshot.url, cmd=running["cmd"], timeout=running.get("timeout"),
                               started_at=started_at, pid=running["pid"])
        mark_started(snapshot, running["plugin"], running["hook_name"], started_at, row)
    withdraw_unfinished(snapshot, runs, fact.get("running", []))
    if fact["status"] != "sealed":
        if snapshot.status == Snapshot.StatusChoices.QUEUED and fact["status"] == "started":
            snapshot.safe_update({"status": Snapshot.StatusChoices.STARTED, "retry_at": lease_until}, refresh=True,
                                 extra_filter={"status": Snapshot.StatusChoices.QUEUED})
        elif snapshot.status == Snapshot.StatusChoices.STARTED or retry_plugins(snapshot):
            # The lease renewed, as SnapshotService.renew_lease renews it (a sealed Snapshot
            # whose plugins run again keeps its claim the same way).
            Snapshot.objects.filter(id=snapshot.id, status=snapshot.status).update(
                retry_at=lease_until, modified_at=datetime.now(tz=tz.utc))
        return False
    if not fact.get("copied"):
        if fact.get("dir", True):
            # Sealed in abxd, but not copied into the collection whole yet (its plugins' files
            # may be there, copied as they ended): the next turn seals it.
            return False
        # Sealed in abxd before it ran (its crawl cancelled): sealed with no files, as
        # ArchiveBox seals the Snapshots of a Crawl cancelled before they ran.
        if snapshot.status != Snapshot.StatusChoices.SEALED:
            snapshot.seal()
        snapshot.refresh_from_db()
        if retry_plugins(snapshot):
            let_go_of_redo(snapshot)
        return snapshot.status == Snapshot.StatusChoices.SEALED
    if snapshot.downloaded_at is None:
        snapshot.downloaded_at = datetime.now(tz=tz.utc)
        snapshot.save(update_fields=["downloaded_at", "modified_at"])
    snapshot.refresh_from_db()
    if snapshot.status != Snapshot.StatusChoices.SEALED:
        snapshot.seal()
    snapshot.refresh_from_db()
    if retry_plugins(snapshot):
        # Its plugins ran again: the request consumed, as SnapshotService consumes it.
        let_go_of_redo(snapshot)
    snapshot.ensure_crawl_symlink()
    snapshot.write_index_jsonl()
    return snapshot.status == Snapshot.StatusChoices.SEALED


def serve_crawl(fact, iface, lease_until):
    from archivebox.crawls.models import Crawl

    crawl_id = fact["archivebox_crawl"]
    crawl = Crawl.objects.filter(id=crawl_id).first()
    if crawl is None:
        # Deleted in ArchiveBox: abxd's crawl is cancelled, and let go.
        say(type="control", archivebox_crawl=crawl_id, action="cancel")
        say(type="released", archivebox_crawl=crawl_id)
        return
    status = crawl.status
    seen = fact.get("seen")
    if seen is not None and status != seen and fact["status"] != "sealed":
        # The Crawl was changed in ArchiveBox since the last turn: abxd follows.
        if status == Crawl.StatusChoices.SEALED:
            say(type="control", archivebox_crawl=crawl_id, action="cancel")
        elif status == Crawl.StatusChoices.PAUSED and not fact["paused"]:
            say(type="control", archivebox_crawl=crawl_id, action="pause")
        elif seen == Crawl.StatusChoices.PAUSED and status != Crawl.StatusChoices.PAUSED and fact["paused"]:
            say(type="control", archivebox_crawl=crawl_id, action="resume")
    else:
        # Otherwise ArchiveBox follows abxd (`abxctl pause`, `resume`, `cancel`).
        if fact["paused"] and status in crawl.RUNNABLE_STATES:
            crawl.pause()
        elif not fact["paused"] and status == Crawl.StatusChoices.PAUSED:
            crawl.resume()
        crawl.refresh_from_db()
    mirrored_all = True
    for snapshot_fact in fact.get("snapshots", []):
        try:
            mirrored = project_snapshot(crawl, snapshot_fact, iface, lease_until)
        except Exception as err:  # one snapshot's failure must not hold its crawl's others
            traceback.print_exc()
            say(type="error", message=f"snapshot {snapshot_fact['uuid']}: {type(err).__name__}: {err}")
            mirrored = False
        if mirrored:
            say(type="mirrored", archivebox_crawl=crawl_id, snapshot=snapshot_fact["uuid"])
        else:
            mirrored_all = False
    crawl.refresh_from_db()
    if fact["status"] == "sealed" and mirrored_all:
        if crawl.status != Crawl.StatusChoices.SEALED:
            crawl.seal()
        else:
            # Sealed in ArchiveBox (a cancel): its open snapshots are sealed as its runner seals
            # them (`reconcile_parent_lifecycle`), and the row let go of (`retry_at` NULL).
            for snapshot in crawl.snapshot_set.filter(status__in=("queued", "started", "paused")):
                snapshot.seal()
            crawl.cleanup_runtime()
            Crawl.objects.filter(id=crawl.id).update(retry_at=None, modified_at=datetime.now(tz=tz.utc))
        crawl.refresh_from_db()
        say(type="seen", archivebox_crawl=crawl_id, status=crawl.status)
        say(type="released", archivebox_crawl=crawl_id)
        return
    if crawl.status in crawl.RUNNABLE_STATES:
        # Started, and the lease renewed, as CrawlService writes it while the crawl runs.
        Crawl.objects.filter(id=crawl.id, status__in=crawl.RUNNABLE_STATES).update(
            status=Crawl.StatusChoices.STARTED, retry_at=lease_until, modified_at=datetime.now(tz=tz.utc))
        crawl.refresh_from_db()
    say(type="seen", archivebox_crawl=crawl_id, status=crawl.status)


def refuse(fact):
    """A Crawl abxd cannot run (its URLs or config refused): sealed with the reason in its
    notes, so that it is not claimed again; of a redo refused, its Snapshots are let go of."""
    from archivebox.crawls.models import Crawl

    from archivebox.core.models import Snapshot

    crawl = Crawl.objects.filter(id=fact["archivebox_crawl"]).first()
    if crawl is None:
        return
    redo = fact.get("redo") or []
    for snapshot in Snapshot.objects.filter(id__in=[uuid.UUID(hex=hexid(value)) for value in redo]):
        let_go_of_redo(snapshot)
    what = "a redo of " + ", ".join(redo) if redo else "it"
    notes = (crawl.notes + "\n" if crawl.notes else "") + f"abxd refused {what}: " + fact["why"]
    update = {"notes": notes, "modified_at": datetime.now(tz=tz.utc)}
    if crawl.status != Crawl.StatusChoices.SEALED:
        update.update(status=Crawl.StatusChoices.SEALED, retry_at=None)
    Crawl.objects.filter(id=crawl.id).update(**update)
    say(type="released", archivebox_crawl=fact["archivebox_crawl"])


def retention():
    """What ArchiveBox's runner loop does once a minute (`run_pending_crawls`): the Snapshots
    asked to be deleted are deleted, and the rows past their `delete_at` (`DELETE_AFTER`) go, a
    batch of each."""
    from archivebox.core.models import ArchiveResult, Snapshot
    from archivebox.crawls.models import Crawl
    from archivebox.machine.models import Process

    Snapshot.delete_requested(batch_size=100)
    for model in (ArchiveResult, Snapshot, Crawl, Process):
        model.delete_expired(batch_size=100, backfill_missing=False)


def dispatch_schedules(now):
    """Due CrawlSchedules queue their Crawl, as ArchiveBox's runner loop dispatches them."""
    from archivebox.crawls.models import CrawlSchedule

    for schedule in CrawlSchedule.objects.filter(is_enabled=True).select_related("template", "template__created_by"):
        if schedule.is_due(now):
            schedule.dispatch(queued_at=now)


def start_crawl(crawl):
    """A claimed Crawl started, as ArchiveBox's runner starts one."""
    from archivebox.crawls.models import Crawl

    Crawl.objects.filter(id=crawl.id, retry_at=crawl.retry_at).update(
        status=Crawl.StatusChoices.STARTED, modified_at=datetime.now(tz=tz.utc))


def crawl_claim(crawl, urls, depth, **more):
    """The record of a claimed Crawl (or a redo of some of its Snapshots)."""
    persona = crawl.resolve_persona()
    user = crawl.created_by.username if crawl.created_by_id else "system"
    say(type="claimed", archivebox_crawl=hexid(crawl.id), user=user, urls=urls, depth=depth,
        tags=crawl.current_tag_names(), config=crawl.config or {},
        persona=persona.name if persona else None, **more)


def claim_redo(snapshots, lease_seconds, now):
    """Due Snapshots of one Crawl -- queued again alone (`Snapshot.archive`,
    `schedule_plugin_run`), or left unfinished by a runner that died -- claimed as
    `_run_due_snapshot_locked` claims each: those that need plugins run again that are the first's
    (the others wait for a later claim). True if any was claimed."""
    from archivebox.core.models import Snapshot
    from archivebox.crawls.models import Crawl

    crawl = snapshots[0].crawl
    if crawl.status == Crawl.StatusChoices.PAUSED:
        return False
    if crawl.status != Crawl.StatusChoices.SEALED:
        # Queued again with them (`update_and_requeue`): claimed too, or left to its holder.
        if crawl.retry_at is None or crawl.retry_at > now or not crawl.claim_processing_lock(lock_seconds=lease_seconds):
            return False
        crawl.refresh_from_db()
        start_crawl(crawl)
    plugins = None
    claimed = []
    for snapshot in snapshots:
        wanted = retry_plugins(snapshot) or None
        if claimed and wanted != plugins:
            continue
        if snapshot.status == Snapshot.StatusChoices.SEALED:
            if not Snapshot.claim_for_worker(snapshot, lock_seconds=lease_seconds):
                continue
        else:
            if not snapshot.claim_processing_lock(lock_seconds=lease_seconds):
                continue
            if any(process.is_running for process in snapshot.process_set.filter(status="running")):
                # A hook of a runner that died still runs: not run twice, as ArchiveBox's
                # runner leaves it.
                snapshot.update_and_requeue(retry_at=now + timedelta(seconds=lease_seconds))
                continue
        snapshot.refresh_from_db()
        if snapshot.fs_migration_needed:
            snapshot.migrate_filesystem_to_current_version()
            snapshot.refresh_from_db()
        if snapshot.status == Snapshot.StatusChoices.QUEUED:
            snapshot.start_processing()
        plugins = wanted
        claimed.append(snapshot)
    if not claimed:
        if crawl.status != Crawl.StatusChoices.SEALED:
            # (Claimed for nothing: due again at once, for its next claim.)
            Crawl.objects.filter(id=crawl.id).update(retry_at=now)
        return False
    redo = [{"uuid": hexid(snapshot.id), "url": snapshot.url,
             "bookmarked_at": int((snapshot.bookmarked_at or snapshot.created_at).timestamp() * 1000)}
            for snapshot in claimed]
    crawl_claim(crawl, [snapshot.url for snapshot in claimed], 0, plugins=plugins, redo=redo)
    crawl.refresh_from_db()
    say(type="seen", archivebox_crawl=hexid(crawl.id), status=crawl.status)
    return True


def due_snapshots(held, now):
    """The due Snapshots of Crawls abxd does not hold, by Crawl, oldest due first; a Snapshot
    due because its Crawl was paused or sealed follows its Crawl (`reconcile_parent_lifecycle`),
    and a sealed one due for no plugins is kept as ArchiveBox keeps one
    (`run_snapshot_maintenance`)."""
    from archivebox.core.models import Snapshot
    from archivebox.services.runner import run_snapshot_maintenance

    by_crawl = {}
    due = (Snapshot.objects.filter(retry_at__lte=now, status__in=(Snapshot.StatusChoices.QUEUED,
                                                                  Snapshot.StatusChoices.STARTED,
                                                                  Snapshot.StatusChoices.SEALED))
           .exclude(crawl_id__in=[uuid.UUID(hex=value) for value in held])
           .select_related("crawl").order_by("retry_at"))
    for snapshot in due[:500]:
        if snapshot.reconcile_parent_lifecycle() is not None:
            continue
        if snapshot.status == Snapshot.StatusChoices.SEALED and not retry_plugins(snapshot):
            run_snapshot_maintenance(str(snapshot.id))
            continue
        by_crawl.setdefault(snapshot.crawl_id, []).append(snapshot)
    return by_crawl


def claim(held, at_most, lease_seconds, now):
    """Due Snapshots (a redo) and due Crawls, each claimed by ArchiveBox's compare-and-set and
    started as its runner starts one."""
    from archivebox.core.models import Snapshot
    from archivebox.crawls.models import Crawl

    claimed = 0
    by_crawl = due_snapshots(held, now)
    for snapshots in by_crawl.values():
        if claimed >= at_most:
            break
        if claim_redo(snapshots, lease_seconds, now):
            claimed += 1
    due = (Crawl.objects.filter(status__in=(Crawl.StatusChoices.QUEUED, Crawl.StatusChoices.STARTED),
                                retry_at__lte=now)
           .exclude(id__in=[uuid.UUID(hex=value) for value in held])
           .exclude(id__in=list(by_crawl)).order_by("retry_at", "created_at"))
    for crawl in due[: max(at_most, 0) * 4]:
        if claimed >= at_most:
            break
        made = crawl.snapshot_set.exists()
        if made and crawl.snapshot_set.exclude(status=Snapshot.StatusChoices.SEALED).exists():
            # Its open Snapshots are not due: claimed with them, when they are.
            continue
        if not crawl.claim_processing_lock(lock_seconds=lease_seconds):
            continue
        crawl.refresh_from_db()
        urls = [] if made else crawl.get_urls_list()
        if Crawl._config_value(crawl.get_current_config(), "ONLY_NEW", True):
            # As `create_snapshots_from_urls` skips a URL the collection has a snapshot of.
            urls = [url for url in urls if not Snapshot.objects.filter(url=url).exists()]
        if not urls:
            # Nothing (left) to archive: sealed as ArchiveBox's runner seals a Crawl it made no
            # Snapshot of, or one whose Snapshots are all sealed.
            crawl.seal()
            say(type="seen", archivebox_crawl=hexid(crawl.id), status=crawl.status)
            continue
        start_crawl(crawl)
        crawl_claim(crawl, urls, crawl.max_depth)
        say(type="seen", archivebox_crawl=hexid(crawl.id), status=Crawl.StatusChoices.STARTED)
        claimed += 1


def main(facts):
    setup()
    from archivebox.config import CONSTANTS
    now = datetime.now(tz=tz.utc)
    lease_until = now + timedelta(seconds=facts["lease_seconds"])
    from archivebox.services.process_service import current_network_interface_with_machine

    mine, holder = orchestrator_row(facts["orchestrator_pid"], CONSTANTS.DATA_DIR, now + timedelta(days=1))
    if mine is None:
        # ArchiveBox's own runner serves the collection: abxd finishes what it holds, and takes
        # nothing new until that runner exits.
        who = f"pid {holder.pid}, {' '.join(holder.cmd or [])}" if holder is not None else "starting"
        say(type="error", message=f"ArchiveBox's own runner ({who}) serves this collection: "
            "abxd takes no new Crawl of it until that runner exits (run ArchiveBox's UI without "
            "its runner: docs/service.md)")
    iface = current_network_interface_with_machine()
    for fact in facts.get("refused", []):
        refuse(fact)
    for fact in facts.get("crawls", []):
        try:
            serve_crawl(fact, iface, lease_until)
        except Exception as err:  # one crawl's failure must not stop the others' turn
            traceback.print_exc()
            say(type="error", message=f"crawl {fact['archivebox_crawl']}: {type(err).__name__}: {err}")
    if facts.get("maintenance") and mine is not None:
        try:
            retention()
        except Exception as err:
            traceback.print_exc()
            say(type="error", message=f"retention: {type(err).__name__}: {err}")
    if facts.get("claim") and mine is not None:
        dispatch_schedules(now)
        held = [fact["archivebox_crawl"] for fact in facts.get("crawls", [])]
        claim(held, facts.get("max_claims", 1), facts["lease_seconds"], now)


def run(encoded):
    main(json.loads(bytes.fromhex(encoded)))

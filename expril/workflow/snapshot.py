"""A long run's state carried from one machine to the next, for a study that outlasts the machine it
started on (docs/workflow.md, "A study over several machines").

`save` archives what the next machine needs to go on where this one stopped: every file of the
results folder and Snakemake's metadata (the code and params each output was made with) except the
arrays (`.npz`) that no pending job reads: a finished run's networks, labels and releases, which
nothing reads again, are most of a study's bytes. Snakemake does not rerun the job of a missing
file whose readers are all done, so a restored study plans exactly the jobs it had left, as the
restore checks. The files Snakemake marks incomplete (a job cut off midway) are left out too.

A large array that pending jobs read and that belongs to a seed block rather than to one run (its
path has no `eps` folder: the data, the splits, the feature maps; no release) is recomputed at
`restore` from the same seeds instead of carried, and checked against the sha256 it had. A run's
array over HEAVY bytes that pending jobs read (a pass stopped midway: a generator's samples, a
synthesizer's records) is left out and its job planned again: the save plans the study with such arrays set
aside, so that the restore's check expects those jobs.

Each `save` adds one part to a folder (part-01.tar.xz, ...): the files that are new or changed
since the parts before, and the rows of the state's manifest (path, sha256, mtime, carried) that
changed, so that a study saved on several machines costs its bytes once (a save after a restore
writes every row again: the restore dated every file); a part over VOLUME bytes is cut into volumes
(part-02.tar.xz.01, ...). `restore` unpacks the parts in order into
a fresh checkout, drops what a later part no longer holds, recomputes what was not carried (and
removes what else the recomputing jobs wrote), checks every file against the manifest, and dates
the files in the order they had, just before now, so that Snakemake reruns nothing. A job's start
and end survive in Snakemake's metadata, which `benchmarks.study_cost --spent` reads.

The study's snakemake arguments are its targets first, then its options:

    python -m expril.workflow.snapshot save data/study/mystudy -- tune --configfile config/extended.yaml
    python -m expril.workflow.snapshot restore data/study/mystudy
"""

import argparse
import contextlib
import csv
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from base64 import urlsafe_b64decode
from collections import Counter
from pathlib import Path

CHANGES = "changes.csv"  # the manifest's rows that changed since the part before; a dropped file's has no sha256
PENDING = "pending.json"  # the study's snakemake arguments, its results folder and the jobs it had left
METADATA = Path(".snakemake/metadata")
ASIDE = Path(".snakemake/snapshot-aside")  # where `save` sets a run's heavy arrays aside while it plans
LARGE = 256 * 1024  # bytes: a seed block's data, splits and feature maps, not a run's arrays
VOLUME = 4_000_000  # bytes: a larger part is cut into volumes of this size, files a repository takes
HEAVY = 1_000_000  # bytes: a run's array over this (a generator's samples: 7.5 MB) is made again, not carried


def dry_run_jobs(out):
    """The jobs a dry run's output lists, as dicts with rule, input, output, resources and reason
    lists (the jobs of a group job are listed indented)."""
    jobs, job = [], None
    for line in out.splitlines():
        if m := re.match(r"\s*(?:local)?rule (\w+):$", line):
            job = {"rule": m.group(1), "input": [], "output": [], "resources": [], "reason": []}
            jobs.append(job)
        elif job and (m := re.match(r"\s+(input|output|resources|reason): (.*)$", line)):
            job[m.group(1)] = m.group(2).split(", " if m.group(1) != "reason" else "; ")
    return jobs


def snakemake(args, cwd, dry_run=True):
    """Snakemake's output for ARGS in `cwd`; an error shows Snakemake's own."""
    command = [sys.executable, "-m", "snakemake", *(["--dry-run"] if dry_run else ["--cores", "all"]), *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed:\n{(result.stdout + result.stderr)[-3000:]}")
    return result.stdout


def per_rule(jobs):
    return dict(sorted(Counter(job["rule"] for job in jobs).items()))


def reasons(jobs):
    """How many jobs each kind of reason plans ('Missing output files', 'Code has changed...')."""
    return dict(sorted(Counter(kind for job in jobs for kind in {r.split(":")[0] for r in job["reason"]}).items()))


def _identity(job):
    """A job as its rule and outputs: what a restored plan must hold."""
    return [job["rule"], *sorted(job["output"])]


def _identities(jobs):
    return sorted(map(_identity, jobs))


def incomplete(root="."):
    """The files Snakemake marks incomplete (a job cut off midway wrote them): its markers in
    .snakemake/incomplete are named by the file's path in urlsafe base64, cut into parts of which
    all but the last start with '@'."""
    folder = Path(root) / ".snakemake/incomplete"
    names = [p.relative_to(folder).parts for p in folder.rglob("*") if p.is_file() and p.name != "migration_underway"]
    return {os.path.normpath(urlsafe_b64decode("".join(s.lstrip("@") for s in parts)).decode()) for parts in names}


def state(results, jobs, root="."):
    """{file: carried} for the files a save records, relative to `root`: the results folder's and
    Snakemake's metadata, less the arrays no pending job reads and the files left incomplete (a
    pending job's complete output stays: the plan may read it, as the finalists' seeds are read);
    carried is False for a large array of a seed block, recomputed at restore."""
    needed = {os.path.normpath(f) for job in jobs for f in job["input"]}
    cut_off = incomplete(root)
    out = {}
    for name in _recorded(results, root):
        if name in cut_off or (name.endswith(".npz") and name not in needed):
            continue
        run_file = any(part.startswith("eps") for part in Path(name).parts)
        out[name] = not name.endswith(".npz") or run_file or _size(root, name) <= LARGE
    return out


def _recorded(results, root):
    """The files of the results folder and of Snakemake's metadata under `root`, relative to it."""
    return [
        str(path.relative_to(root))
        for folder in (Path(results), METADATA)
        for path in sorted((Path(root) / folder).rglob("*"))
        if path.is_file()
    ]


def _digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _numbered(folder, pattern):
    """{number: path} of the files of `folder` whose whole name matches `pattern` (one group: the
    number)."""
    return {int(m[1]): p for p in Path(folder).iterdir() if (m := re.fullmatch(pattern, p.name))}


def _parts(folder):
    """`folder`'s parts in order of their numbers, each named part-NN.tar.xz, whether one file or
    cut into volumes (a part counts once its first volume is there: `_cut` renames it last)."""
    if not Path(folder).is_dir():
        return []
    numbers = _numbered(folder, r"part-(\d+)\.tar\.xz(?:\.01)?")
    return [Path(folder) / f"part-{n:02d}.tar.xz" for n in sorted(numbers)]


def _open(part):
    """A part as a tar archive: its file, or its volumes (part-NN.tar.xz.01, ...) joined in order."""
    volumes = _numbered(part.parent, re.escape(part.name) + r"\.(\d+)")
    if volumes and sorted(volumes) != list(range(1, len(volumes) + 1)):
        raise SystemExit(f"{part}: volumes {sorted(volumes)}, not 1 to {len(volumes)}")
    files = [volumes[n] for n in sorted(volumes)] or [part]
    return tarfile.open(fileobj=io.BytesIO(b"".join(f.read_bytes() for f in files)))


def _read_member(part, name):
    with _open(part) as tar:
        return tar.extractfile(name).read().decode()


def read_manifest(folder):
    """The state `folder`'s last part ends with: {path: (sha256, mtime, carried)}, each part's
    changes applied in order."""
    state = {}
    for part in _parts(folder):
        for r in csv.DictReader(io.StringIO(_read_member(part, CHANGES))):
            if r["sha256"]:
                state[r["path"]] = (r["sha256"], float(r["mtime"]), r["carried"] == "1")
            else:
                del state[r["path"]]
    return state


def planned(args, results, root="."):
    """The jobs left and the state to save, with the run arrays over HEAVY bytes that pending jobs
    read left out: planned with them set aside, so that their jobs are planned to rerun (and what
    those jobs read is kept in turn), until no such array is left; the set-aside files return."""
    aside = Path(root) / ASIDE
    if aside.exists() and any(f.is_file() for f in aside.rglob("*")):
        raise SystemExit(f"{aside} holds arrays a save cut off set aside: move them back into place first")
    heavy = set()
    while True:
        with _aside(heavy, root):
            jobs = dry_run_jobs(snakemake(args, root))
            files = state(results, jobs, root)
            more = {f for f, carried in files.items() if carried and f.endswith(".npz") and _size(root, f) > HEAVY}
        if not more:
            return jobs, files, heavy
        heavy |= more


def _size(root, f):
    return (Path(root) / f).stat().st_size


@contextlib.contextmanager
def _aside(files, root):
    """`files` moved into ASIDE for the block, then back with their dates."""
    aside = Path(root) / ASIDE
    moved = []
    try:
        for f in sorted(files):
            (aside / f).parent.mkdir(parents=True, exist_ok=True)
            (Path(root) / f).rename(aside / f)
            moved.append(f)
        yield
    finally:
        for f in moved:
            (aside / f).rename(Path(root) / f)


def save(folder, args, results="results", root="."):
    """Add a part to `folder` holding the state of `root` for the study `snakemake ARGS` runs
    (targets first, then options); return the part's path, the jobs left and the arrays left out
    whose jobs rerun. Run it with the study stopped."""
    jobs, files, heavy = planned(args, results, root)
    parts = _parts(folder)
    before = read_manifest(folder)
    manifest = {f: (_digest(Path(root) / f), (Path(root) / f).stat().st_mtime, c) for f, c in files.items()}
    part = Path(folder) / f"part-{len(parts) + 1:02d}.tar.xz"
    part.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(folder) / "part.tmp"
    pending = {"args": list(args), "results": str(results), "jobs": _identities(jobs)}
    with tarfile.open(tmp, "w:xz") as tar:
        for name, data in _tables(manifest, before, pending).items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), time.time()
            tar.addfile(info, io.BytesIO(data))
        for f, (sha, _, carried) in manifest.items():
            old = before.get(f)
            if carried and not (old and old[0] == sha and old[2]):  # new, changed, or recomputed before
                tar.add(Path(root) / f, arcname=f)
    _cut(tmp, part)
    return part, jobs, heavy


def _cut(tmp, part):
    """`tmp` as `part`, or as its volumes where it is over VOLUME bytes; renamed last, so that a save
    stopped midway leaves no part; the volumes such a save left of it go first."""
    for stale in _numbered(part.parent, re.escape(part.name) + r"\.(\d+)(?:\.tmp)?").values():
        stale.unlink()
    data = tmp.read_bytes()
    if len(data) <= VOLUME:
        tmp.rename(part)
        return
    volumes = {Path(f"{part}.{k // VOLUME + 1:02d}"): data[k : k + VOLUME] for k in range(0, len(data), VOLUME)}
    for volume, chunk in volumes.items():
        volume.with_name(f"{volume.name}.tmp").write_bytes(chunk)
    tmp.unlink()
    for volume in reversed(volumes):
        volume.with_name(f"{volume.name}.tmp").rename(volume)


def _tables(manifest, before, pending):
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["path", "sha256", "mtime", "carried"])
    writer.writerows(
        [f, sha, repr(mtime), int(carried)]
        for f, (sha, mtime, carried) in manifest.items()
        if before.get(f) != (sha, mtime, carried)
    )
    writer.writerows([f, "", "", ""] for f in before if f not in manifest)
    return {CHANGES: out.getvalue().encode(), PENDING: json.dumps(pending, indent=1).encode()}


def _pending(folder):
    return json.loads(_read_member(_parts(folder)[-1], PENDING))


def restore(folder, root="."):
    """Unpack `folder`'s parts into `root` (a fresh checkout) as the last part's manifest says,
    recompute what it did not carry; return that manifest."""
    parts = _parts(folder)
    if not parts:
        raise SystemExit(f"{folder}: no part-*.tar.xz to restore")
    pending = _pending(folder)
    results = Path(root) / pending["results"]
    if results.exists():
        raise SystemExit(f"{results} exists: restore into a fresh checkout, whose results it would otherwise mix")
    manifest = read_manifest(folder)
    _unpack(parts, manifest, root)
    recomputed = [f for f, (_, _, carried) in manifest.items() if not carried]
    if recomputed:
        args = pending["args"]
        options = args[next((i for i, a in enumerate(args) if a.startswith("-")), len(args)) :]
        snakemake([*recomputed, *options], root, dry_run=False)
        _unpack(parts, manifest, root)  # again: the recomputing jobs rewrote their logs, benchmarks, metadata
        for name in _recorded(pending["results"], root):  # and by-products a finished job's dates would miss
            if name not in manifest:
                (Path(root) / name).unlink()
    for f, (sha, _, _) in manifest.items():
        path = Path(root) / f
        if not path.is_file() or _digest(path) != sha:
            raise SystemExit(f"{parts[-1]}: {f} is missing or differs from its manifest entry after restoring")
    _date(manifest, root)
    return manifest


def _date(manifest, root, step_ns=1000):
    """Date the restored files in the order they had, `step_ns` apart up to now: after the checkout
    and the installed packages, which jobs read, and with every comparison Snakemake makes between a
    job's inputs and its outputs and benchmark file as it was (an input over 1 MB newer than them
    reruns the job: Snakemake compares no checksum there). 1 µs keeps them apart as floats."""
    order = {mtime: i for i, mtime in enumerate(sorted({mtime for _, mtime, _ in manifest.values()}))}
    now = time.time_ns()
    for f, (_, mtime, _) in manifest.items():
        stamp = now - (len(order) - order[mtime]) * step_ns
        os.utime(Path(root) / f, ns=(stamp, stamp))


def _unpack(parts, manifest, root):
    """Each part in order, less the files a later part no longer holds."""
    for part in parts:
        with _open(part) as tar:
            tar.extractall(root, members=[m for m in tar if m.name in manifest], filter="data")


def check(folder, root="."):
    """The jobs the restored study plans and those it had left when saved, each as its rule and
    outputs (equal when nothing finished reruns and nothing pending was lost); the jobs planned now
    and not then, with their reasons; and those planned then and not now, as identities."""
    pending = _pending(folder)
    jobs = dry_run_jobs(snakemake(pending["args"], root))
    then = {tuple(job) for job in pending["jobs"]}
    extra = [job for job in jobs if tuple(_identity(job)) not in then]
    lost = sorted(then - {tuple(_identity(job)) for job in jobs})
    return _identities(jobs), pending["jobs"], extra, lost


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ours, study = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="save: FOLDER -- TARGETS OPTIONS")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save", help="add a part holding the state of the study after `--` (run it stopped)")
    s.add_argument("--results", default="results", help="the results folder (config key `results`)")
    for command in (s, sub.add_parser("restore"), sub.add_parser("check")):
        command.add_argument("folder")
    a = parser.parse_args(ours)
    if a.command == "save":
        # A stop's SIGTERM as an exception, so that the arrays set aside go back (_aside).
        signal.signal(signal.SIGTERM, lambda *_: sys.exit("save stopped by SIGTERM: no part written"))
        if not study:
            parser.error("save: give the study's snakemake targets and options after `--`")
        part, jobs, heavy = save(a.folder, study, a.results)
        print(f"{part}: {len(jobs)} jobs left, planned for", ", ".join(f"{r} ({n})" for r, n in reasons(jobs).items()))
        if heavy:
            print(f"{len(heavy)} run arrays over {HEAVY} bytes left out, their jobs planned again")
    elif a.command == "restore":
        print(f"restored {len(restore(a.folder))} files")
    if a.command in ("restore", "check"):
        now, then, extra, lost = check(a.folder)
        counts = [Counter(job[0] for job in jobs) for jobs in (now, then)]
        for rule in sorted(set(counts[0]) | set(counts[1])):
            print(f"{rule:45} {counts[0].get(rule, 0):7} {counts[1].get(rule, 0):7}")
        for job in extra[:5]:
            print(f"not planned at save: {job['rule']} {', '.join(job['output'])}: {'; '.join(job['reason'])}")
        for rule, *outputs in lost[:5]:
            print(f"planned at save, not now: {rule} {', '.join(outputs)}")
        if now != then:
            raise SystemExit("the restored study plans other jobs than it had left (per rule above: now, at save)")
        print(f"{len(now)} jobs left, as at save")


if __name__ == "__main__":
    main()

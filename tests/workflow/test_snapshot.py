"""A study carried between machines (expril/workflow/snapshot.py), on a toy workflow shaped like the
study's: a seed block's large data array, each run's small network and its evaluation."""

import io
import os
import re
import tarfile
from base64 import urlsafe_b64encode

import pytest

from expril.workflow import snapshot
from harness import plan

# Two seed blocks, two eps each: data per block (1.2 MB, over snapshot.LARGE and over the 1 MB up to
# which Snakemake compares checksums rather than dates), a network per run,
# an evaluation per run with its benchmark file.
TOY = """
rule all:
    input: expand("res/eval/{b}/eps{e}.csv", b=[1, 2], e=[1, 2])
rule data:
    output: "res/data/{b}/source.npz", "res/data/{b}/target.npz"
    run:
        import numpy as np
        np.savez(output[0], x=np.random.default_rng(int(wildcards.b)).random(150000))
        np.savez(output[1], y=np.zeros(3))
rule train:
    input: "res/data/{b}/source.npz"
    output: "res/learner/{b}/eps{e}/model.npz"
    run:
        import numpy as np
        np.savez(output[0], w=np.load(input[0])["x"][:10] * float(wildcards.e))
rule evaluate:
    input: "res/learner/{b}/eps{e}/model.npz"
    output: "res/eval/{b}/eps{e}.csv"
    benchmark: "res/benchmarks/evaluate/{b}/eps{e}.tsv"
    run:
        import numpy as np
        open(output[0], "w").write(f"{np.load(input[0])['w'].sum():.6f}\\n")
"""
EVALS = [f"res/eval/{b}/eps{e}.csv" for b in (1, 2) for e in (1, 2)]
NETWORK = "res/learner/2/eps2/model.npz"


def toy(folder):
    folder.mkdir()
    (folder / "Snakefile").write_text(TOY)
    return folder


def test_dry_run_jobs_reads_a_plan():
    out = "rule train:\n    input: a.npz, b.npz\n    output: m.npz\n    jobid: 3\nlocalrule all:\n    input: m.npz\n"
    jobs = snapshot.dry_run_jobs(out)
    assert [(j["rule"], j["input"], j["output"]) for j in jobs] == [
        ("train", ["a.npz", "b.npz"], ["m.npz"]),
        ("all", ["m.npz"], []),
    ]
    assert snapshot.per_rule(jobs + jobs[:1]) == {"all": 1, "train": 2}
    out = "rule train:\n    reason: Missing output files: m.npz; Input files updated by another job: a.npz\n"
    assert snapshot.reasons(snapshot.dry_run_jobs(out) * 2) == {
        "Input files updated by another job": 2,
        "Missing output files": 2,
    }


def test_state_keeps_what_pending_jobs_read(tmp_path):
    for name, size in {
        "res/data/1/source.npz": snapshot.LARGE + 1,  # a block's, read: recomputed
        "res/data/2/source.npz": snapshot.LARGE + 1,  # a block's, read by no one: dropped
        "res/learner/1/eps1/model.npz": 10,  # a finished run's network: dropped
        "res/learner/1/eps2/labels.npz": snapshot.LARGE + 1,  # a run's, read: carried, however large
        "res/learner/1/eps2/model.npz": 10,  # a pending job's output, read by no one: dropped
        "res/eval/1/half.csv": 10,  # cut off midway (Snakemake's marker below): dropped
        "res/tune/finalists.yaml": 10,  # a pending job's complete output, which a plan may read: kept
        ".snakemake/incomplete/cmVzL2V2YWwvMS9oYWxmLmNzdg==": 0,  # the marker of res/eval/1/half.csv
        "res/eval/1/eps1.csv": 10,
        ".snakemake/metadata/cmVz": 10,
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * size)
    jobs = [{"rule": "train", "input": ["res/data/1/source.npz", "res/learner/1/eps2/labels.npz"],
             "output": ["res/learner/1/eps2/model.npz", "res/tune/finalists.yaml"]}]  # fmt: skip
    assert snapshot.incomplete(tmp_path) == {"res/eval/1/half.csv"}
    assert snapshot.state("res", jobs, tmp_path) == {
        "res/data/1/source.npz": False,
        "res/eval/1/eps1.csv": True,
        "res/learner/1/eps2/labels.npz": True,
        "res/tune/finalists.yaml": True,
        ".snakemake/metadata/cmVz": True,
    }


@pytest.mark.slow
def test_a_study_goes_on_where_it_stopped(tmp_path, monkeypatch, capsys):
    first = toy(tmp_path / "first")
    stop = ["--cores", "1", *EVALS[:3]]  # stopped before block 2's eps 2
    snapshot.snakemake(stop, first, dry_run=False)
    monkeypatch.chdir(first)
    with monkeypatch.context() as small:
        small.setattr(snapshot, "VOLUME", 1500)
        snapshot.main(["save", "--results", "res", str(tmp_path / "parts"), "--", "all", "--cores", "1"])
    part = tmp_path / "parts" / "part-01.tar.xz"
    assert capsys.readouterr().out.startswith(
        f"{part}: 3 jobs left, planned for Input files updated by another job (2)"
    )
    # Cut into volumes of 1,500 bytes, the last shorter: read as one.
    volumes = sorted((tmp_path / "parts").iterdir())
    assert [v.name for v in volumes[:2]] == ["part-01.tar.xz.01", "part-01.tar.xz.02"]
    assert {v.stat().st_size for v in volumes[:-1]} == {1500} and volumes[-1].stat().st_size <= 1500

    manifest = snapshot.read_manifest(tmp_path / "parts")
    with snapshot._open(part) as tar:
        carried = sorted(m.name for m in tar if m.name.startswith("res/"))
    # Block 2's data, read by its pending network, is recomputed; block 1's, every network, and the
    # half-done job's nothing: only evaluations and benchmark files travel.
    assert manifest["res/data/2/source.npz"][2] is False
    assert not any(f.startswith(("res/data/1", "res/learner")) for f in manifest)
    assert carried == sorted(
        [*EVALS[:3], *(f"res/benchmarks/evaluate/{b}/eps{e}.tsv" for b, e in ((1, 1), (1, 2), (2, 1)))]
    )

    second = toy(tmp_path / "second")  # a fresh checkout on another machine
    snapshot.restore(tmp_path / "parts", second)
    # Block 2's data, recomputed, is newer than the finished eps 1 network's evaluation and its
    # benchmark file unless the restore dates every file in its saved order.
    now, then, _, _ = snapshot.check(tmp_path / "parts", second)
    left = [["all"], ["evaluate", "res/eval/2/eps2.csv"], ["train", "res/learner/2/eps2/model.npz"]]
    assert now == then == left
    assert (second / "res/data/2/source.npz").read_bytes() == (first / "res/data/2/source.npz").read_bytes()
    dates = {f: os.stat(second / f).st_mtime for f in manifest}
    assert sorted(dates, key=dates.get) == sorted(manifest, key=lambda f: manifest[f][1])
    assert max(dates.values()) - min(dates.values()) < 1
    restored = {str(f.relative_to(second)) for f in (second / "res").rglob("*") if f.is_file()}
    assert restored == {f for f in manifest if f.startswith("res/")}  # block 2's target.npz removed
    snapshot.snakemake(["--cores", "1"], second, dry_run=False)
    assert [(second / f).read_text() for f in EVALS[:3]] == [(first / f).read_text() for f in EVALS[:3]]

    # The next save carries only what changed: block 2's eps 2 and its benchmark.
    part2, jobs, _ = snapshot.save(tmp_path / "parts", ["all"], "res", second)
    assert jobs == []
    assert part2.is_file()
    with snapshot._open(part2) as tar:
        assert sorted(m.name for m in tar if m.name.startswith("res/")) == [
            "res/benchmarks/evaluate/2/eps2.tsv", "res/eval/2/eps2.csv"]  # fmt: skip
    third = toy(tmp_path / "third")
    snapshot.restore(tmp_path / "parts", third)
    assert snapshot.check(tmp_path / "parts", third) == ([], [], [], [])
    assert [(third / f).read_text() for f in EVALS] == [(second / f).read_text() for f in EVALS]
    with pytest.raises(SystemExit, match="res exists: restore into a fresh checkout"):
        snapshot.restore(tmp_path / "parts", third)

    # A restore onto other code is refused: the edited network's runs would rerun.
    fourth = toy(tmp_path / "fourth")
    (fourth / "Snakefile").write_text(TOY.replace('["x"][:10]', '["x"][:11]'))
    monkeypatch.chdir(fourth)
    with pytest.raises(SystemExit, match="plans other jobs than it had left"):
        snapshot.main(["restore", str(tmp_path / "parts")])
    out = capsys.readouterr().out
    assert "train                                               4       0" in out
    assert "not planned at save: data res/data/1/source.npz, res/data/1/target.npz: Missing output files" in out
    assert re.search(r"not planned at save: train res/learner/1/eps1/model.npz: .*Code has changed", out)


@pytest.mark.slow
def test_a_heavy_run_array_is_left_out_and_its_job_planned_again(tmp_path, monkeypatch):
    """Stopped after block 2's eps 2 network, before its evaluation: the network (330 bytes, over a
    HEAVY of 100) is not carried, and the plan saved and restored trains it again."""
    first = toy(tmp_path / "first")
    snapshot.snakemake(["--cores", "1", *EVALS[:3], NETWORK], first, dry_run=False)
    monkeypatch.setattr(snapshot, "HEAVY", 100)
    part, jobs, heavy = snapshot.save(tmp_path / "parts", ["all"], "res", first)
    assert heavy == {NETWORK}
    assert snapshot.reasons(jobs) == {"Input files updated by another job": 2, "Missing output files": 2}
    assert NETWORK not in snapshot.read_manifest(tmp_path / "parts") and (first / NETWORK).is_file()  # set aside, back
    second = toy(tmp_path / "second")
    snapshot.restore(tmp_path / "parts", second)
    now, then, extra, lost = snapshot.check(tmp_path / "parts", second)
    assert now == then == [["all"], ["evaluate", "res/eval/2/eps2.csv"], ["train", NETWORK]] and extra == lost == []
    snapshot.snakemake(["--cores", "1"], second, dry_run=False)
    snapshot.snakemake(["--cores", "1"], first, dry_run=False)
    assert [(second / f).read_text() for f in EVALS] == [(first / f).read_text() for f in EVALS]


@pytest.mark.slow
def test_a_save_writes_the_rows_that_changed(tmp_path):
    """Saved again on the same machine after the last run: the rows of its evaluation, benchmark and
    metadata, and block 2's data, which nothing pending reads any more, dropped."""
    first = toy(tmp_path / "first")
    snapshot.snakemake(["--cores", "1", *EVALS[:3]], first, dry_run=False)
    snapshot.save(tmp_path / "parts", ["all"], "res", first)
    saved = snapshot.read_manifest(tmp_path / "parts")
    snapshot.snakemake(["--cores", "1"], first, dry_run=False)
    part, jobs, _ = snapshot.save(tmp_path / "parts", ["all"], "res", first)
    rows = snapshot._read_member(part, snapshot.CHANGES).splitlines()[1:]
    metadata = [f".snakemake/metadata/{urlsafe_b64encode(f.encode()).decode()}" for f in (EVALS[3], NETWORK)]
    new = ["res/benchmarks/evaluate/2/eps2.tsv", EVALS[3], *metadata]
    assert sorted(row.split(",")[0] for row in rows) == sorted([*new, "res/data/2/source.npz"])
    assert "res/data/2/source.npz,,," in rows
    assert snapshot.read_manifest(tmp_path / "parts") == {
        **{f: row for f, row in saved.items() if f != "res/data/2/source.npz"},
        **{f: (snapshot._digest(first / f), (first / f).stat().st_mtime, True) for f in new},
    }
    second = toy(tmp_path / "second")
    snapshot.restore(tmp_path / "parts", second)
    assert snapshot.check(tmp_path / "parts", second) == ([], [], [], [])
    assert [(second / f).read_text() for f in EVALS] == [(first / f).read_text() for f in EVALS]


@pytest.mark.slow
def test_restore_refuses_a_recomputed_array_that_differs(tmp_path):
    first = toy(tmp_path / "first")
    snapshot.snakemake(["--cores", "1", *EVALS[:3]], first, dry_run=False)
    snapshot.save(tmp_path / "parts", ["all"], "res", first)
    second = toy(tmp_path / "second")
    (second / "Snakefile").write_text(TOY.replace("default_rng(int(wildcards.b))", "default_rng(7)"))
    with pytest.raises(SystemExit, match="res/data/2/source.npz is missing or differs"):
        snapshot.restore(tmp_path / "parts", second)


def test_restore_names_an_empty_folder(tmp_path):
    with pytest.raises(SystemExit, match="no part-"):
        snapshot.restore(tmp_path, tmp_path)


@pytest.mark.slow
def test_a_package_table_is_no_input_a_csv_is():
    """A package's table lies in the environment, at a path another installation does not share: as
    an input it would rerun, restored elsewhere, every job of its dataset. Its sha256 in the params
    names it; a csv of the repository stays an input."""
    files = [f"results/extended/data/{d}/0-19/source.npz" for d in ("vote", "CTG-A")]
    jobs = plan(*files, "--configfile", "config/extended.yaml")
    assert {job["output"][0]: (job["rule"], job["input"]) for job in jobs} == {
        files[0]: ("generate_data", []),
        files[1]: ("generate_data", ["data/cardiotocography/CTG.csv"]),
    }


def _archive(members):
    """A tar.xz holding `members` ({name: text}), as bytes."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:xz") as tar:
        for name, text in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    return out.getvalue()


def test_parts_go_by_number_and_count_once_their_first_volume_is_there(tmp_path):
    (tmp_path / "part-99.tar.xz").write_bytes(_archive({"x": "99"}))
    data = _archive({"x": "100"})
    (tmp_path / "part-100.tar.xz.01").write_bytes(data[:50])
    (tmp_path / "part-100.tar.xz.02").write_bytes(data[50:])
    # A save cut off while renaming its volumes (the first is renamed last), and one before.
    (tmp_path / "part-101.tar.xz.01.tmp").write_bytes(data[:50])
    (tmp_path / "part-101.tar.xz.02").write_bytes(data[50:])
    (tmp_path / "part.tmp").write_bytes(data)
    assert snapshot._parts(tmp_path) == [tmp_path / "part-99.tar.xz", tmp_path / "part-100.tar.xz"]
    assert snapshot._read_member(tmp_path / "part-100.tar.xz", "x") == "100"
    snapshot._cut(tmp_path / "part.tmp", tmp_path / "part-101.tar.xz")  # the next save: one file
    assert [p.name for p in tmp_path.glob("part-101*")] == ["part-101.tar.xz"]
    assert snapshot._read_member(tmp_path / "part-101.tar.xz", "x") == "100"
    (tmp_path / "part-100.tar.xz.04").write_bytes(b"")
    with pytest.raises(SystemExit, match=r"part-100.tar.xz: volumes \[1, 2, 4\], not 1 to 3"):
        snapshot._read_member(tmp_path / "part-100.tar.xz", "x")


def test_a_save_refuses_arrays_a_cut_off_save_left_aside(tmp_path):
    (tmp_path / snapshot.ASIDE / "res/learner/1/eps1").mkdir(parents=True)
    (tmp_path / snapshot.ASIDE / "res/learner/1/eps1/model.npz").write_bytes(b"x")
    with pytest.raises(SystemExit, match="holds arrays a save cut off set aside: move them back"):
        snapshot.planned(["all"], "res", tmp_path)


def test_a_failed_check_names_the_jobs_planned_at_save_and_not_now(tmp_path, monkeypatch, capsys):
    then = [["evaluate", "res/eval/2/eps2.csv"], ["train", "res/learner/2/eps2/model.npz"]]
    lost = [("train", "res/learner/2/eps2/model.npz")]
    monkeypatch.setattr(snapshot, "check", lambda folder: (then[:1], then, [], lost))
    with pytest.raises(SystemExit, match="plans other jobs than it had left"):
        snapshot.main(["check", str(tmp_path)])
    assert "planned at save, not now: train res/learner/2/eps2/model.npz" in capsys.readouterr().out

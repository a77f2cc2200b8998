"""Sweeps on a cluster (`runs.cluster`, `zoo sweep --executor local|slurm`): submitit's local
executor end to end (a second submission submits nothing, a job killed mid-run is resubmitted
and resumes, a preempted one is requeued and resumes), and the SLURM job array that would be
submitted, checked without a cluster (`sbatch` and `sacct` stand-ins on the PATH)."""

import dataclasses
import os
import signal
import stat
import sys
import time
from pathlib import Path

import pytest
from conftest import make_tiny_config

import runs
import runs.run
from runs.cli import main
from runs.cluster import ClusterConfig, ClusterError, executor, job, read_jobs, statuses
from runs.sweeps import Sweep, SweepRun, final_metrics, run_sweep

submitit = pytest.importorskip("submitit")


def _sweep(steps: int, labels=("a",)) -> Sweep:
    config = make_tiny_config(steps=steps, eval_every=steps)
    every = min(20, steps)  # long enough to be stopped mid-run, few checkpoints to write
    config = dataclasses.replace(
        config, run=dataclasses.replace(config.run, checkpoint_every=every)
    )
    return Sweep(
        "tiny",
        tuple(SweepRun(label, config, {"v": label}) for label in labels),
        metrics=("ood.accuracy",),
        x="v",
        seeds=(0,),
    )


def _wait(predicate, what: str, timeout: float = 300.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _checkpointed(run: Path) -> bool:
    folder = run / "checkpoints"
    return folder.is_dir() and any(p.name.isdigit() and int(p.name) > 0 for p in folder.iterdir())


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(c) for c in text.split()]
    return found


def _events(run: Path) -> list[str]:
    return [r["event"] for r in runs.run.read_history(run)]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the job's tasks in /proc")
def test_local_jobs_submit_once_and_a_killed_job_resumes(tmp_path, capsys):
    out = tmp_path / "sweep"
    sweep = _sweep(steps=200)
    local = ClusterConfig(executor="local", time=30)
    assert run_sweep(sweep, "test/tiny", out, cluster=local) == []
    jobs = read_jobs(out)
    first = jobs["a/seed_0"]
    assert first["executor"] == "local" and Path(first["stderr"]).parent.is_dir()

    # The same command while the job runs submits nothing.
    assert run_sweep(sweep, "test/tiny", out, cluster=local) == []
    assert read_jobs(out) == jobs
    assert "a seed 0: running (job" in capsys.readouterr().err

    # Killed mid-run (every process of the job, no clean-up), after its first checkpoint.
    run = out / "a" / "seed_0"
    _wait(lambda: _checkpointed(run), "the first checkpoint")
    controller = int(first["job_id"])
    for pid in _children(controller):
        os.kill(pid, signal.SIGKILL)
    _wait(lambda: statuses(out, [("a", 0, _plan_config(sweep))])[0].state == "failed", "failure")
    assert main(["sweep", str(out), "--status"]) == 0
    table = capsys.readouterr().out
    assert "failed" in table and first["stderr"] in table

    # Submitted again: it resumes from its newest checkpoint and finishes.
    waiting = ClusterConfig(executor="local", time=30, wait=True)
    assert run_sweep(sweep, "test/tiny", out, cluster=waiting) == []
    assert read_jobs(out)["a/seed_0"]["job_id"] != first["job_id"]
    assert "a seed 0: resubmitted as job" in capsys.readouterr().err
    assert _events(run)[:2] == ["start", "resume"]
    direct = tmp_path / "direct"
    runs.train(_plan_config(sweep), direct, progress=False)
    assert final_metrics(run) == pytest.approx(final_metrics(direct), rel=1e-6, abs=1e-7)
    assert (out / "summary.csv").is_file()  # every run finished: the report is written

    # Finished: nothing is submitted again.
    before = read_jobs(out)
    assert run_sweep(sweep, "test/tiny", out, cluster=waiting) == []
    assert read_jobs(out) == before
    assert main(["sweep", str(out), "--status"]) == 0
    assert "1 finished" in capsys.readouterr().out


def _plan_config(sweep: Sweep):
    return runs.sweeps.plan(sweep)[0][2]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the job's tasks in /proc")
def test_a_preempted_local_job_is_requeued_and_resumes(tmp_path):
    config = _plan_config(_sweep(steps=200))
    run = tmp_path / "run"
    submitted = executor(ClusterConfig(executor="local", time=30), tmp_path, "tiny").submit(
        job(config, run)
    )
    _wait(lambda: _checkpointed(run), "the first checkpoint")
    # The signal SLURM sends a job's processes before its time runs out or it is preempted
    # (submitit asks for it with --signal USR2@90): submitit's handler requeues the job.
    (task,) = _children(int(submitted.job_id))
    os.kill(task, signal.SIGUSR2)
    assert submitted.result() == str(run)
    assert _events(run)[:2] == ["start", "resume"]
    assert runs.load(run).step == 200


def _stand_ins(bin_dir: Path, record: Path, state: str) -> None:
    """`sbatch` that records the script it is given and answers with a job id, `sacct` that
    reports every task of that job in `state`, and an `srun`."""
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f'#!/bin/sh\ncp "$1" {record}\necho "Submitted batch job 4242"\n')
    sacct = bin_dir / "sacct"
    sacct.write_text(
        "#!/bin/sh\necho 'JobID|State|NodeList'\n"
        f'for i in 0 1; do echo "4242_$i|{state}|node1"; done\n'
    )
    srun = bin_dir / "srun"  # submitit looks for it to tell that this is a SLURM cluster
    srun.write_text("#!/bin/sh\nexit 1\n")
    for tool in (sbatch, sacct, srun):
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


def test_the_slurm_job_array_is_generated_and_not_submitted_twice(tmp_path, monkeypatch, capsys):
    record = tmp_path / "submitted.sh"
    _stand_ins(tmp_path / "bin", record, "PENDING")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "sweep"
    sweep = _sweep(steps=4, labels=("a", "b"))
    slurm = ClusterConfig(
        executor="slurm",
        partition="gpu",
        gpus_per_run=2,
        cpus_per_run=4,
        time=90,
        array_parallelism=1,
        mem_gb=32,
        slurm=("account=my-lab",),
    )
    assert run_sweep(sweep, "test/tiny", out, cluster=slurm) == []
    script = record.read_text()
    for line in (
        "#SBATCH --array=0-1%1",
        "#SBATCH --partition=gpu",
        "#SBATCH --gpus-per-node=2",
        "#SBATCH --ntasks-per-node=2",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --time=90",
        "#SBATCH --mem=32GB",
        "#SBATCH --account=my-lab",
        "#SBATCH --job-name=zoo-test-tiny",
    ):
        assert line in script, line
    assert "submitit.core._submit" in script and str(out / "jobs") in script
    jobs = read_jobs(out)
    assert sorted(jobs) == ["a/seed_0", "b/seed_0"]
    assert {r["job_id"] for r in jobs.values()} == {"4242_0", "4242_1"}
    # Each job trains its own run with the distributed path (one process per GPU).
    pickled = Path(jobs["a/seed_0"]["folder"])
    assert pickled.is_dir()

    record.unlink()
    assert run_sweep(sweep, "test/tiny", out, cluster=slurm) == []  # both queued: nothing new
    assert not record.exists() and read_jobs(out) == jobs
    assert main(["sweep", str(out), "--status"]) == 0
    assert "2 queued" in capsys.readouterr().out


def test_a_failed_slurm_job_is_resubmitted(tmp_path, monkeypatch, capsys):
    record = tmp_path / "submitted.sh"
    _stand_ins(tmp_path / "bin", record, "TIMEOUT")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "sweep"
    slurm = ClusterConfig(executor="slurm")
    sweep = _sweep(steps=4, labels=("a", "b"))
    assert run_sweep(sweep, "test/tiny", out, cluster=slurm) == []
    record.unlink()
    assert main(["sweep", str(out), "--status"]) == 0
    table = capsys.readouterr().out
    assert "2 failed" in table and "4242_0_0_log.err" in table  # the log of each failed job
    assert run_sweep(sweep, "test/tiny", out, cluster=slurm) == []
    assert record.is_file()  # submitted again
    assert "#SBATCH --array=0-1%2" in record.read_text()  # at most the array's size


def test_bad_cluster_settings_and_a_missing_submitit_are_clear_errors(
    tmp_path, monkeypatch, capsys
):
    with pytest.raises(ClusterError, match="split evenly"):
        ClusterConfig(executor="slurm", gpus_per_run=3, nodes_per_run=2)
    with pytest.raises(ClusterError, match="KEY=VALUE"):
        ClusterConfig(executor="slurm", slurm=("account",))
    with pytest.raises(ValueError, match="--jobs goes with --executor processes"):
        run_sweep(_sweep(4), "test/tiny", tmp_path / "x", jobs=2, cluster=ClusterConfig("local"))
    with pytest.raises(SystemExit) as exit_info:  # refused by the parser, before any work
        main(["sweep", "schug2024/fig3b-cpu", "--out", str(tmp_path / "z"), "--wait"])
    assert exit_info.value.code == 2 and "--wait goes with" in capsys.readouterr().err
    assert not (tmp_path / "z").exists()
    monkeypatch.setitem(sys.modules, "submitit", None)  # as if it were not installed
    from runs.cluster import _submitit

    with pytest.raises(ClusterError, match=r"pip install 'compgen-zoo\[cluster\]'"):
        _submitit()
    code = main(
        ["sweep", "schug2024/fig3b-cpu", "--out", str(tmp_path / "y"), "--executor", "slurm"]
    )
    assert code == 2 and "compgen-zoo[cluster]" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()
    assert main(["sweep", str(tmp_path), "--status"]) == 2
    assert "holds no sweep" in capsys.readouterr().err

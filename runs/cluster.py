"""Sweeps on a cluster: each unfinished run of a sweep becomes a submitit job.

`zoo sweep NAME --out DIR --executor slurm` submits the runs of the sweep that are neither
finished nor already queued or running as one SLURM job array (`submitit.AutoExecutor`), and
returns; `--executor local` does the same with submitit's local executor (jobs are processes
of this machine that outlive the command). The job ids and where their logs go are recorded
in `DIR/jobs.json`, so running the same command again submits only what needs it:

- a finished run (its final checkpoint and evaluation written) is skipped;
- a run whose job is queued or running is not submitted twice;
- a run whose job failed, was cancelled or ran out of time is submitted again and resumes
  from its newest checkpoint (as `zoo train --resume` does).

A job that SLURM preempts, or whose time runs out, is requeued by submitit (its
checkpointing: `TrainJob` is a `submitit.helpers.Checkpointable`) and resumes the same way.
`zoo sweep DIR --status` prints, per run, finished / running / queued / failed (with the log)
/ interrupted / not started. A run of several GPUs or nodes is one job of several tasks, one
process per GPU, joined by `jax.distributed` (the `--distributed` path of `zoo train`).

submitit is an optional dependency (`pip install 'compgen-zoo[cluster]'`); without it the
cluster executors say what to install, and the default executor (`processes`: `zoo sweep
--jobs`, worker processes of this command) needs nothing.
"""

import dataclasses
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from .config import TrainConfig, to_dict
from .lock import atomic_write_text

JOBS_FILE = "jobs.json"
"""In a sweep's directory: `{"LABEL/seed_K": {"job_id", "executor", "folder", "stdout",
"stderr", "submitted"}}`, the newest job of each run."""
JOBS_FOLDER = "jobs"
"""In a sweep's directory: submitit's folder (the pickled jobs, their logs and results)."""

Executor = Literal["processes", "local", "slurm"]

QUEUED = frozenset({"PENDING", "REQUEUED", "CONFIGURING", "SUSPENDED", "RESIZING"})
RUNNING = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"})
"""SLURM's job states (`sacct`) that mean a job will still train its run."""


class ClusterError(ValueError):
    """A cluster sweep cannot be submitted as asked; the message says why and what to do."""


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """Where the runs of a sweep train: worker processes of this command, or submitit jobs."""

    executor: Executor = "processes"
    """`processes`: this command trains them (`--jobs` at once); `local`: submitit jobs on this
    machine; `slurm`: a SLURM job array (submitit). The last two return once submitted: run
    the same command again to go on, or `--status` to see where each run is."""
    partition: str | None = None
    """SLURM partition (default: the cluster's)."""
    gpus_per_run: int = 0
    """GPUs of each run; above 1, one process per GPU joined by `jax.distributed`."""
    cpus_per_run: int | None = None
    """CPU cores of each run's process (SLURM's `--cpus-per-task`; default: the cluster's)."""
    nodes_per_run: int = 1
    """Nodes of each run (the GPUs split evenly over them)."""
    time: int = 240
    """Minutes a job may run before it is stopped (and requeued by submitit, to resume)."""
    array_parallelism: int = 64
    """Jobs of the array that run at once."""
    mem_gb: int | None = None
    """Memory of each node of a job, in GB (default: the cluster's)."""
    slurm: tuple[str, ...] = ()
    """Further sbatch settings as KEY=VALUE, e.g. `account=my-lab qos=high`."""
    wait: bool = False
    """Wait until every submitted job has ended (and then write the report)."""

    def __post_init__(self):
        if self.executor not in ("processes", "local", "slurm"):
            raise ClusterError(
                f"--executor must be processes, local or slurm, got {self.executor!r}."
            )
        for flag, value, least in (
            ("--gpus-per-run", self.gpus_per_run, 0),
            ("--nodes-per-run", self.nodes_per_run, 1),
            ("--time", self.time, 1),
            ("--array-parallelism", self.array_parallelism, 1),
        ):
            if value < least:
                raise ClusterError(f"{flag} must be >= {least}, got {value}.")
        if self.cpus_per_run is not None and self.cpus_per_run < 1:
            raise ClusterError(f"--cpus-per-run must be >= 1, got {self.cpus_per_run}.")
        if self.gpus_per_run and self.gpus_per_run % self.nodes_per_run:
            raise ClusterError(
                f"--gpus-per-run ({self.gpus_per_run}) must split evenly over --nodes-per-run "
                f"({self.nodes_per_run})."
            )
        bad = [item for item in self.slurm if "=" not in item or not item.partition("=")[0]]
        if bad:
            raise ClusterError(f"--slurm takes KEY=VALUE settings, got {bad}.")
        if self.executor == "processes" and self.wait:
            raise ClusterError("--wait goes with --executor local or slurm.")

    @property
    def submits(self) -> bool:
        """Whether the runs are submitted as jobs (not trained by this command)."""
        return self.executor != "processes"

    @property
    def tasks_per_node(self) -> int:
        """Processes of a job on each node: one per GPU (one without GPUs)."""
        return max(1, self.gpus_per_run // self.nodes_per_run)


def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise ClusterError(
            "--executor local and --executor slurm need submitit: pip install "
            "'compgen-zoo[cluster]' (or pip install submitit). --executor processes (the "
            "default) needs nothing."
        ) from None
    return submitit


def executor(cluster: ClusterConfig, out: Path, name: str) -> Any:
    """The submitit executor of `cluster` writing into `out/jobs`."""
    submitit = _submitit()
    folder = out / JOBS_FOLDER / "%j"
    try:
        made = submitit.AutoExecutor(folder=folder, cluster=cluster.executor)
    except RuntimeError as error:  # e.g. no srun: not a SLURM cluster
        raise ClusterError(
            f"--executor {cluster.executor}: {error} Submit from a machine of the cluster (a "
            "login node), or use --executor local."
        ) from None
    parameters: dict[str, Any] = {
        "name": f"zoo-{name.replace('/', '-')}",
        "timeout_min": cluster.time,
        "nodes": cluster.nodes_per_run,
        "tasks_per_node": cluster.tasks_per_node,
    }
    if cluster.gpus_per_run:
        parameters["gpus_per_node"] = cluster.gpus_per_run // cluster.nodes_per_run
    if cluster.executor == "slurm":
        parameters["slurm_array_parallelism"] = cluster.array_parallelism
        if cluster.partition:
            parameters["slurm_partition"] = cluster.partition
        if cluster.cpus_per_run:
            parameters["cpus_per_task"] = cluster.cpus_per_run
        if cluster.mem_gb:
            parameters["mem_gb"] = cluster.mem_gb
        if cluster.slurm:
            parameters["slurm_additional_parameters"] = {
                key: value for key, _, value in (item.partition("=") for item in cluster.slurm)
            }
    else:  # the local executor runs one node
        parameters.pop("nodes")
    made.update_parameters(**parameters)
    return made


class _Job:
    """What a job does: train one run of a sweep into its directory (resuming it if it holds a
    run), then return the directory. A `submitit.helpers.Checkpointable` when submitted (see
    `TrainJob`): preempted or out of time, it is requeued and resumes from its newest
    checkpoint."""

    def __init__(self, config: dict[str, Any], directory: str, tasks: int = 1):
        self.config = config
        self.directory = directory
        self.tasks = tasks

    def __call__(self) -> str:
        from .config import DistributedConfig
        from .distributed import initialize
        from .run import CONFIG_FILE, config_from_dict, train

        if self.tasks > 1:  # one process per GPU: JAX finds the others through SLURM
            initialize(DistributedConfig(distributed=True))
        config = config_from_dict(self.config)
        directory = Path(self.directory)
        if _run_finished(directory, config.run.steps):
            return str(directory)
        train(config, directory, resume=(directory / CONFIG_FILE).exists(), progress=False)
        return str(directory)


def _train_job_class() -> type:
    """`TrainJob`: `_Job` as a `submitit.helpers.Checkpointable`, made on first use (submitit
    is optional) and kept as this module's attribute, so that a job's pickle names it."""
    made = globals().get("TrainJob")
    if made is None:
        submitit = _submitit()

        class TrainJob(_Job, submitit.helpers.Checkpointable):
            """`_Job`, requeued (to resume) when SLURM preempts it or its time runs out."""

        made = globals()["TrainJob"] = TrainJob
    return made


def __getattr__(name: str) -> Any:  # `runs.cluster.TrainJob`, for unpickling in a job
    if name == "TrainJob":
        return _train_job_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def job(config: TrainConfig, directory: Path, tasks: int = 1) -> Any:
    """The submitit callable that trains `config` into `directory` (a `TrainJob`)."""
    return _train_job_class()(to_dict(config), str(directory), tasks)


def _run_finished(directory: Path, steps: int) -> bool:
    from .sweeps import _finished

    try:
        return (directory / "config.json").is_file() and _finished(directory, steps)
    except Exception:  # a torn metrics file: not finished
        return False


# --------------------------------------------------------------------------- job records


def _key(label: str, seed: int) -> str:
    return f"{label}/seed_{seed}"


def read_jobs(out: Path) -> dict[str, dict[str, Any]]:
    """The job records of the sweep in `out` (empty if none was submitted)."""
    path = out / JOBS_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError:
        return {}


def _write_jobs(out: Path, records: dict[str, dict[str, Any]]) -> None:
    atomic_write_text(out / JOBS_FILE, json.dumps(records, indent=2, sort_keys=True) + "\n")


def _alive(pid: int) -> bool:
    """Whether the process `pid` is running (not a zombie)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    stat = Path(f"/proc/{pid}/stat")
    if stat.is_file():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return True
    return True


def job_state(record: dict[str, Any]) -> str:
    """The recorded job's state: `queued`, `running` or `ended` (finished, failed, cancelled,
    timed out or unknown: it trains nothing any more)."""
    if record.get("executor") == "local":
        return "running" if _alive(int(record["job_id"])) else "ended"
    submitit = _submitit()
    state = submitit.SlurmJob(Path(record["folder"]), str(record["job_id"])).state
    state = str(state).split()[0].upper()
    if state in QUEUED:
        return "queued"
    if state in RUNNING:
        return "running"
    return "ended"


@dataclasses.dataclass(frozen=True)
class RunStatus:
    """Where one run of a sweep is."""

    label: str
    seed: int
    state: str
    """`finished`, `running`, `queued`, `failed` (its job ended before the run did),
    `interrupted` (started, no job) or `not started`."""
    step: int
    steps: int
    job_id: str | None = None
    log: str | None = None


def _last_step(directory: Path) -> int:
    from .run import read_metrics

    try:
        return max((row["step"] for row in read_metrics(directory)), default=0)
    except Exception:
        return 0


def statuses(out: Path, items: Sequence[tuple[str, int, TrainConfig]]) -> list[RunStatus]:
    """The status of each `(label, seed, config)` of the sweep in `out`."""
    from .sweeps import run_dir

    records = read_jobs(out)
    found = []
    for label, seed, config in items:
        directory = run_dir(out, label, seed)
        steps = config.run.steps
        record = records.get(_key(label, seed))
        job_id = None if record is None else str(record["job_id"])
        log = None if record is None else record.get("stderr")
        if _run_finished(directory, steps):
            state = "finished"
        elif record is not None:
            state = job_state(record)
            state = "failed" if state == "ended" else state
        elif (directory / "config.json").exists():
            state = "interrupted"
        else:
            state = "not started"
        found.append(RunStatus(label, seed, state, _last_step(directory), steps, job_id, log))
    return found


def print_statuses(found: Sequence[RunStatus], file: Any = None) -> None:
    """A table of `found`: run, seed, state, steps done, job and log (of failed jobs)."""
    file = file or sys.stdout
    rows = [("run", "seed", "state", "step", "job", "log")]
    for s in found:
        log = s.log if s.state == "failed" and s.log else ""
        rows.append((s.label, str(s.seed), s.state, f"{s.step}/{s.steps}", s.job_id or "-", log))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(f"{c:<{w}}" for c, w in zip(r, widths, strict=True)).rstrip(), file=file)
    counts: dict[str, int] = {}
    for s in found:
        counts[s.state] = counts.get(s.state, 0) + 1
    print(", ".join(f"{n} {state}" for state, n in counts.items()), file=file)


# --------------------------------------------------------------------------- submitting


def submit(
    out: Path,
    name: str,
    items: Sequence[tuple[str, int, TrainConfig]],
    cluster: ClusterConfig,
) -> list[RunStatus]:
    """Submit each of `items` (`(label, seed, config)` of the sweep `name`, in `out`) that is
    neither finished nor queued or running, as one job array; record the jobs. Returns the
    status of every item after submitting."""
    from .sweeps import run_dir

    before = statuses(out, items)
    todo = [
        (item, status)
        for item, status in zip(items, before, strict=True)
        if status.state in ("failed", "interrupted", "not started")
    ]
    for status in before:
        if status.state in ("queued", "running", "finished"):
            where = f" (job {status.job_id})" if status.job_id else ""
            print(f"{status.label} seed {status.seed}: {status.state}{where}", file=sys.stderr)
    if not todo:
        return before
    made = executor(cluster, out, name)
    callables = [
        job(config, run_dir(out, label, seed), cluster.tasks_per_node * cluster.nodes_per_run)
        for (label, seed, config), _ in todo
    ]
    with made.batch():
        jobs = [made.submit(c) for c in callables]
    records = read_jobs(out)
    for ((label, seed, _), status), submitted in zip(todo, jobs, strict=True):
        records[_key(label, seed)] = {
            "job_id": str(submitted.job_id),
            "executor": cluster.executor,
            "folder": str(submitted.paths.folder),
            "stdout": str(submitted.paths.stdout),
            "stderr": str(submitted.paths.stderr),
            "submitted": time.time(),
        }
        verb = "resubmitted" if status.state == "failed" else "submitted"
        print(
            f"{label} seed {seed}: {verb} as job {submitted.job_id} (log {submitted.paths.stderr})",
            file=sys.stderr,
        )
    _write_jobs(out, records)
    if cluster.wait:
        for submitted in jobs:
            try:
                submitted.result()
            except Exception as error:  # the job failed: its status says so, with the log
                print(f"job {submitted.job_id} failed: {error}".splitlines()[0], file=sys.stderr)
    return statuses(out, items)

"""Configuration dataclasses of the built-in task generators.

This module imports no JAX: plugin listing and the CLI import it to build flags and help text.
Each field's docstring (the string literal under it) is its `--help` line in the CLI.
"""

import dataclasses
from typing import ClassVar, Literal

HyperteacherSplit = Literal["compositional", "non-compositional", "connected", "disconnected"]

_SPLITS: tuple[str, ...] = ("compositional", "non-compositional", "connected", "disconnected")


@dataclasses.dataclass(frozen=True)
class HyperteacherConfig:
    """The hyperteacher of Schug et al. 2024 (Section 4.1, Appendix C.2).

    A fixed random teacher MLP whose two hidden layers are generated, by one linear map, from a
    task code: per layer, a raw 0/1 mask of 1..K of M modules (not normalized). Training and
    out-of-distribution (OOD) tasks are fixed by `split` and `split_seed`; the teacher by the
    factory's key.
    """

    num_modules: int = 8
    """M: number of modules per generated layer."""
    max_active: int = 2
    """K: at most this many modules are active per layer in the task pool."""
    split: HyperteacherSplit = "compositional"
    """Which tasks train and which are OOD (the four support conditions of the paper)."""
    split_seed: int = 0
    """Seed of the random ('compositional') split; same seed, same split."""
    ood_fraction: float = 0.25
    """Fraction of all tasks held out as OOD by the 'compositional' split."""
    in_features: int = 16
    """Teacher input size."""
    hidden: int = 32
    """Teacher hidden width (all three hidden layers)."""
    out_features: int = 8
    """Teacher output size (number of classes)."""
    shots_support: int = 256
    """Number of support examples per episode."""
    shots_query: int = 256
    """Number of query examples per episode."""
    temperature: float = 0.1
    """Soft targets are softmax(standardized logits / temperature)."""
    num_norm_inputs: int = 1000
    """Number of fixed inputs over which each task's logits are standardized."""
    ood_h: tuple[int, ...] = (1, 2, 4, 8)
    """Evaluation pools ood_h: exactly h modules active in each layer (each h in 1..M)."""

    def __post_init__(self) -> None:
        m, k = self.num_modules, self.max_active
        if self.split not in _SPLITS:
            raise ValueError(f"split={self.split!r} is unknown; use one of {', '.join(_SPLITS)}.")
        if m < 2:
            raise ValueError(f"num_modules={m} is too small; set num_modules >= 2.")
        if k < 1:
            raise ValueError(f"max_active={k} must be at least 1; set max_active >= 1.")
        if k > m:
            raise ValueError(
                f"max_active={k} exceeds num_modules={m}: at most M modules can be active; "
                f"set max_active <= {m} or raise num_modules to >= {k}."
            )
        for name in ("in_features", "hidden", "out_features", "shots_support", "shots_query"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name}={value} must be positive; set {name} >= 1.")
        if self.num_norm_inputs < 2:
            raise ValueError(
                f"num_norm_inputs={self.num_norm_inputs} cannot estimate a standard deviation; "
                "set num_norm_inputs >= 2 (the paper uses 1000)."
            )
        if not self.temperature > 0:
            raise ValueError(
                f"temperature={self.temperature} must be > 0; set e.g. temperature=0.1."
            )
        if not 0.0 < self.ood_fraction < 1.0:
            raise ValueError(
                f"ood_fraction={self.ood_fraction} must lie strictly between 0 and 1; "
                "set e.g. ood_fraction=0.25."
            )
        if self.split_seed < 0:
            raise ValueError(f"split_seed={self.split_seed} must be >= 0; use a non-negative seed.")
        if self.split in ("connected", "disconnected"):
            if k != 2:
                raise ValueError(
                    f"split={self.split!r} is defined for max_active=2 only (got {k}); "
                    "set max_active=2."
                )
            if m % 2 or m <= 4:
                raise ValueError(
                    f"split={self.split!r} needs an even num_modules > 4 (got {m}); "
                    "set num_modules to 6, 8, 10, ..."
                )
        for h in self.ood_h:
            if h < 1:
                raise ValueError(
                    f"ood_h contains {h}: h counts active modules and must be >= 1; remove it."
                )
            if h > m:
                raise ValueError(
                    f"ood_h contains {h} > num_modules={m}: no code has more than M modules "
                    f"active; remove {h} from ood_h."
                )
        if len(set(self.ood_h)) != len(self.ood_h):
            raise ValueError(f"ood_h={self.ood_h} repeats a value; list each h once.")


TeacherStudentSupport = Literal[
    "connected",
    "disconnected",
    "connected-triples",
    "disconnected-one-hots",
    "disconnected-triples",
]
TeacherStudentDistribution = Literal["discrete", "continuous"]

_SUPPORTS: tuple[str, ...] = (
    "connected",
    "disconnected",
    "connected-triples",
    "disconnected-one-hots",
    "disconnected-triples",
)


@dataclasses.dataclass(frozen=True)
class TeacherStudentConfig:
    """The multi-task teacher-student setting of Schug et al. 2024 (Section 3.1, Appendix C.1).

    A fixed random teacher: a 2-layer ReLU MLP whose first layer is a linear combination of
    M modules weighted by the task code. The training codes live on the masks of `support`
    (Table A9 of the paper); `distribution` says how codes are drawn on a mask.
    """

    num_modules: int = 6
    """M: number of teacher modules (the size of the task code)."""
    in_features: int = 16
    """Input size."""
    hidden: int = 16
    """Teacher hidden width."""
    out_features: int = 4
    """Output size."""
    distribution: TeacherStudentDistribution = "discrete"
    """Codes of the training tasks: 'discrete', unit-norm many-hot codes; 'continuous', random
    weights in [0.5, 1) on the active modules (the authors' code; Algorithm 1 up to a `+ 1`,
    see `tasks.teacher_student.continuous_code`). The evaluation pools other than 'test'
    always draw continuous codes, as the authors' evaluation."""
    support: TeacherStudentSupport = "connected"
    """Training masks (Table A9): 'connected' = ring of neighbouring pairs, 'disconnected' =
    all pairs within each half of the modules (two cliques); the discrete distribution adds
    the one-hots to both. 'connected-triples', 'disconnected-one-hots' and
    'disconnected-triples' are the other continuous supports of Table A9."""
    shots_support: int = 256
    """Inputs per support set. For the authors' fresh inputs at every inner step, `inner
    steps x inner batch` (300 x 256 in the paper-size presets) with `--inner.minibatches
    sequential`."""
    shots_query: int = 256
    """Inputs per query set."""
    eval_h: tuple[int, ...] = (1, 2, 3)
    """Evaluation pools h_<h>: codes on every mask with exactly h active modules."""

    def __post_init__(self) -> None:
        m = self.num_modules
        if self.support not in _SUPPORTS:
            raise ValueError(
                f"support={self.support!r} is unknown; use one of {', '.join(_SUPPORTS)}."
            )
        if self.distribution not in ("discrete", "continuous"):
            raise ValueError(
                f"distribution={self.distribution!r} is unknown; use 'discrete' or 'continuous'."
            )
        if m < 4 or m % 2:
            raise ValueError(
                f"num_modules={m}: the supports of Table A9 need an even number of modules >= 4; "
                "set num_modules to 4, 6 (the paper), 8, ..."
            )
        for name in ("in_features", "hidden", "out_features", "shots_support", "shots_query"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name}={value} must be positive; set {name} >= 1.")
        for h in self.eval_h:
            if not 1 <= h <= m:
                raise ValueError(
                    f"eval_h contains {h}: h counts active modules and must lie in 1..{m}; "
                    "remove it."
                )
        if len(set(self.eval_h)) != len(self.eval_h):
            raise ValueError(f"eval_h={self.eval_h} repeats a value; list each h once.")


ScanExperiment = Literal[
    "permutation",
    "augmentation",
    "around_right",
    "length",
    "standard",
    "standard_augmentation",
    "standard_around_right",
    "standard_length",
]
ScanValidation = Literal["true-assignment", "held-out"]


@dataclasses.dataclass(frozen=True)
class ScanEpisodesConfig:
    """SCAN meta-training episodes of Lake 2019 (Sections 4.3-4.6): every episode relabels the
    slot words of SCAN commands under a random assignment (see `tasks.scan_episodes`)."""

    experiment: ScanExperiment = "permutation"
    """add-jump by permutation (4.3) or by augmentation (4.4), around-right (4.5), length
    (4.6), or a standard seq2seq baseline: `standard` (the plain add-jump split, 4.3),
    `standard_augmentation` (SCAN with 20 extra primitives of fixed meaning, 4.4),
    `standard_around_right` (4.5) or `standard_length` (4.6)."""
    num_support: int | None = None
    """Support items per episode (default: 20; 100 for length; 0 for standard)."""
    num_query: int = 20
    """Query items per episode."""
    validation: ScanValidation = "true-assignment"
    """The validation episodes (pool "val"): `true-assignment`, as the reference code, gives
    them the slots' true meanings, which training then never draws (for permutation: 23 of
    the 24 permutations train); `held-out` draws five random assignments as validation and
    keeps them out of training (this code's behaviour before issue 20, and what configs
    saved without this field ran with)."""

    num_extra_directions: int = 2
    """around_right only: the directions `left` and `right` may be written as beside
    themselves (2 in the paper's Table 3: `forward` and `backward`; 20 in its informal
    experiment)."""

    LEGACY_DEFAULTS: ClassVar[dict[str, str]] = {"validation": "held-out"}
    """Values of fields added later, for configs saved before them (what those runs did);
    read by `runs` when it loads a saved config."""

    def __post_init__(self):
        if self.validation not in ("true-assignment", "held-out"):
            raise ValueError(
                f"task.validation must be 'true-assignment' or 'held-out', got {self.validation!r}."
            )
        if self.num_support is not None and self.num_support < 0:
            raise ValueError(f"task.num_support must be >= 0, got {self.num_support}.")
        if self.num_query < 1:
            raise ValueError(f"task.num_query must be >= 1, got {self.num_query}.")
        if self.num_extra_directions < 0:
            raise ValueError(
                f"task.num_extra_directions must be >= 0, got {self.num_extra_directions}."
            )
        if self.num_extra_directions != 2 and self.experiment != "around_right":
            raise ValueError(
                "task.num_extra_directions only applies to --task.experiment around_right "
                f"(got {self.experiment!r}); leave it at 2."
            )


@dataclasses.dataclass(frozen=True)
class MutualExclusivityConfig:
    """Mutual-exclusivity episodes of Lake 2019 (Section 4.2): 4 pseudowords, 4 meanings, 3
    isolated words as support, queries of 2 to 6 words; 5 of the 24 mappings held out."""

    num_query: int = 20
    """Query sequences per episode."""

    def __post_init__(self):
        if self.num_query < 1:
            raise ValueError(f"task.num_query must be >= 1, got {self.num_query}.")


PreferenceSplit = Literal["compositional", "non-compositional", "connected", "disconnected"]

_PREFERENCE_FREE_CELLS = 19  # free cells of the fixed 7x7 four-room layout


def _comb(n: int, k: int) -> int:
    from math import comb

    return comb(n, k)


@dataclasses.dataclass(frozen=True)
class CompositionalPreferencesConfig:
    """The compositional preferences grid world of Schug et al. 2024 (Section 4.2, App. C.3).

    A fixed 7x7 four-room grid with `num_objects` objects of `num_features` colours; a task is a
    preference vector composed of 1..K of M modules (`w`, continuous weights on a mask), the
    targets the optimal action values along an optimal rollout. The module bank and the
    'compositional' split come from the factory's key.
    """

    split: PreferenceSplit = "compositional"
    """Which masks train and which are OOD (Fig. 4B: connected/disconnected, K=2; Fig. 4C:
    compositional/non-compositional, K=3)."""
    num_modules: int = 8
    """M: number of preference modules (rows of the module bank)."""
    num_features: int = 8
    """Number of object features (colours)."""
    num_objects: int = 4
    """Objects per grid instance."""
    max_active: int = 3
    """K: at most this many modules are active in a task's mask."""
    continuous: bool = True
    """Continuous weights in (0.5, 1) on the active modules; else the 0/1 mask itself."""
    discount: float = 0.9
    """Discount factor of the value iteration."""
    horizon: int = 8
    """Bellman backups of the value iteration and steps of each demonstrated rollout."""
    shots_support: int = 16
    """Demonstrated trajectories (fresh instances) per support set."""
    shots_query: int = 16
    """Demonstrated trajectories (fresh instances) per query set."""
    ood_fraction: float = 0.25
    """Fraction of all masks held out as OOD by the 'compositional' split."""
    held_out: int = 7
    """The module whose masks are OOD in the 'non-compositional' split."""

    def __post_init__(self) -> None:
        m, k = self.num_modules, self.max_active
        if self.split not in _SPLITS:
            raise ValueError(f"split={self.split!r} is unknown; use one of {', '.join(_SPLITS)}.")
        if m < 2:
            raise ValueError(f"num_modules={m} is too small; set num_modules >= 2.")
        if not 1 <= k <= m:
            raise ValueError(
                f"max_active={k} must lie in 1..num_modules={m}; set max_active between 1 "
                f"and {m} (or raise num_modules)."
            )
        for name in ("num_features", "num_objects", "horizon", "shots_support", "shots_query"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name}={value} must be positive; set {name} >= 1.")
        if self.num_objects > _PREFERENCE_FREE_CELLS - 1:
            raise ValueError(
                f"num_objects={self.num_objects} does not fit: the grid has "
                f"{_PREFERENCE_FREE_CELLS} free cells, one of them the agent's; set "
                f"num_objects <= {_PREFERENCE_FREE_CELLS - 1} (the paper uses 4)."
            )
        if self.num_objects > 12:
            raise ValueError(
                f"num_objects={self.num_objects} gives {_PREFERENCE_FREE_CELLS} * 2^"
                f"{self.num_objects} states per instance; set num_objects <= 12."
            )
        if not 0.0 <= self.discount <= 1.0:
            raise ValueError(f"discount={self.discount} must lie in [0, 1]; set e.g. 0.9.")
        if self.split == "compositional":
            n = sum(_comb(m, h) for h in range(1, k + 1))
            n_ood = int(n * self.ood_fraction)
            if not 0.0 < self.ood_fraction < 1.0 or not 1 <= n_ood <= n - 1:
                raise ValueError(
                    f"ood_fraction={self.ood_fraction} of {n} masks leaves {n_ood} OOD and "
                    f"{n - n_ood} training masks; both must be >= 1: set ood_fraction "
                    "strictly between 0 and 1, nearer 0.5, or raise num_modules / max_active."
                )
        if self.split == "non-compositional" and not 0 <= self.held_out < m:
            raise ValueError(
                f"held_out={self.held_out} is not a module index, so the OOD split would be "
                f"empty; set held_out in 0..{m - 1}."
            )
        if self.split in ("connected", "disconnected") and (k != 2 or m % 2 or m <= 4):
            raise ValueError(
                f"split={self.split!r} is defined for max_active=2 and an even "
                f"num_modules > 4 (got max_active={k}, num_modules={m}); set max_active=2 "
                "and num_modules to 6, 8, ..."
            )


CompositionalGoalsSplit = Literal["compositional", "non-compositional"]


@dataclasses.dataclass(frozen=True)
class CompositionalGoalsConfig:
    """The compositional goals grid world of Schug et al. 2024 (Section 4.3, Appendix C.4).

    A goal is a (quadrant, interaction, maze, object) combination; the data of a task are
    demonstrations: shortest paths through the goal's maze to an object of the goal's type in
    the goal's quadrant, ended by the goal's interaction. `seed` fixes the mazes (maze i is
    generated from `seed + i`) and the 'compositional' split, as the authors' run seed does.
    """

    split: CompositionalGoalsSplit = "compositional"
    """'compositional': a random `ood_fraction` of the goals is OOD (every factor value still
    trains); 'non-compositional': every goal in the last quadrant is OOD."""
    grid_size: int = 11
    """Side of the square grid (odd, > 5)."""
    num_mazes: int = 5
    """Number of mazes (one factor of a goal)."""
    num_objects: int = 5
    """Number of object types (one factor of a goal)."""
    num_distractors: int = 4
    """Distractor objects per demonstration, of the other types, drawn with replacement."""
    num_interactions: int = 2
    """Number of interaction actions (one factor of a goal); actions = 4 moves + these."""
    ood_fraction: float = 0.25
    """Fraction of the goals held out as OOD by the 'compositional' split."""
    max_len: int = 120
    """Rows per demonstration (padding masked); must hold the longest demonstration."""
    seed: int = 2020
    """Seed of the mazes (maze i from seed + i) and of the 'compositional' split."""

    def __post_init__(self) -> None:
        if self.split not in ("compositional", "non-compositional"):
            raise ValueError(
                f"split={self.split!r} is unknown; use 'compositional' or 'non-compositional'."
            )
        g = self.grid_size
        if g % 2 == 0 or g <= 5:
            raise ValueError(
                f"grid_size={g}: the maze generator needs an odd size > 5; set grid_size to "
                "7, 9, 11 (the paper), ..."
            )
        for name in ("num_mazes", "num_interactions"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name}={value} must be positive; set {name} >= 1.")
        if self.num_objects < 2:
            raise ValueError(
                f"num_objects={self.num_objects}: distractors take the other object types, so "
                "at least 2 are needed; set num_objects >= 2."
            )
        if self.num_distractors < 0:
            raise ValueError(
                f"num_distractors={self.num_distractors} must be >= 0; set e.g. num_distractors=4."
            )
        if not 0.0 < self.ood_fraction < 1.0:
            raise ValueError(
                f"ood_fraction={self.ood_fraction} must lie strictly between 0 and 1; "
                "set e.g. ood_fraction=0.25."
            )
        if self.max_len < g + 1:
            raise ValueError(
                f"max_len={self.max_len} cannot hold a demonstration: the agent starts at least "
                f"grid_size={g} steps from the goal, so a demonstration has >= {g + 1} steps; "
                f"set max_len >= {g + 1} (the paper uses {g * g - 1})."
            )
        if self.seed < 0:
            raise ValueError(f"seed={self.seed} must be >= 0; use a non-negative seed.")


# ----------------------------------------------------------------------------- MiniGrid / BabyAI


@dataclasses.dataclass(frozen=True)
class DoorKeyConfig:
    """MiniGrid's DoorKey-SxS (`tasks.minigrid_levels.DoorKey`): an S x S grid split by a wall
    with a locked yellow door; fetch the yellow key, unlock the door, reach the goal."""

    size: int = 8
    """Side S of the grid, walls included (MiniGrid registers 5, 6, 8 and 16); >= 5."""
    max_steps: int | None = None
    """Steps after which an episode is truncated; None: MiniGrid's 10 * S * S."""
    mission: bool = False
    """Show the mission's tokens in the observations (MiniGrid agents read none: the RIM input
    for MiniGrid levels is the image alone, `docs/specs/meta-rims.md`, B3)."""

    def __post_init__(self) -> None:
        if self.size < 5:
            raise ValueError(f"size={self.size} is too small for a DoorKey level; set size >= 5.")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps={self.max_steps} must be >= 1 (or None for 10 * S * S).")


@dataclasses.dataclass(frozen=True)
class DoorKey5x5Config(DoorKeyConfig):
    """MiniGrid-DoorKey-5x5-v0 (`DoorKeyConfig` with size 5)."""

    size: int = 5
    """Side S of the grid, walls included; >= 5."""


@dataclasses.dataclass(frozen=True)
class DoorKey6x6Config(DoorKeyConfig):
    """MiniGrid-DoorKey-6x6-v0 (`DoorKeyConfig` with size 6)."""

    size: int = 6
    """Side S of the grid, walls included; >= 5."""


@dataclasses.dataclass(frozen=True)
class DoorKey16x16Config(DoorKeyConfig):
    """MiniGrid-DoorKey-16x16-v0 (`DoorKeyConfig` with size 16)."""

    size: int = 16
    """Side S of the grid, walls included; >= 5."""


@dataclasses.dataclass(frozen=True)
class FourRoomsConfig:
    """MiniGrid's FourRooms (`tasks.minigrid_levels.FourRooms`): 19 x 19, four rooms joined by
    one gap in each inner wall; reach the goal."""

    max_steps: int = 100
    """Steps after which an episode is truncated (MiniGrid: 100)."""
    mission: bool = False
    """Show the mission's tokens in the observations (MiniGrid agents read none)."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"max_steps={self.max_steps} must be >= 1.")


def _check_room(room_size: int, objects: int, max_steps: int | None) -> None:
    if room_size < 5:
        raise ValueError(f"room_size={room_size} is too small; set room_size >= 5.")
    room = (room_size - 2) ** 2 - 5
    if objects > room:
        raise ValueError(
            f"{objects} objects do not fit in a room of size {room_size} (at most {room} cells "
            "away from the agent); lower num_dists or raise room_size."
        )
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps={max_steps} must be >= 1 (or None for room_size ** 2).")


@dataclasses.dataclass(frozen=True)
class GoToObjConfig:
    """BabyAI GoToObj (`tasks.babyai.GoTo`): one room, one object; "go to the {colour}
    {type}"; success when the agent faces it."""

    room_size: int = 8
    """Side of the room, walls included (BabyAI: 8)."""
    max_steps: int | None = None
    """Steps after which an episode is truncated; None: BabyAI's room_size ** 2."""

    def __post_init__(self) -> None:
        _check_room(self.room_size, 1, self.max_steps)


@dataclasses.dataclass(frozen=True)
class GoToRedBallConfig:
    """BabyAI GoToRedBall (`tasks.babyai.GoTo`): one room, a red ball and random distractors;
    "go to the red ball" ("a red ball" when a distractor is one too)."""

    room_size: int = 8
    """Side of the room, walls included (BabyAI: 8)."""
    num_dists: int = 7
    """Distractor objects beside the red ball (BabyAI: 7)."""
    max_steps: int | None = None
    """Steps after which an episode is truncated; None: BabyAI's room_size ** 2."""

    def __post_init__(self) -> None:
        _check_room(self.room_size, self.num_dists + 1, self.max_steps)


@dataclasses.dataclass(frozen=True)
class GoToRedBallGreyConfig:
    """BabyAI GoToRedBallGrey (`tasks.babyai.GoTo`): one room, a red ball and grey
    distractors; "go to the red ball"."""

    room_size: int = 8
    """Side of the room, walls included (BabyAI: 8)."""
    num_dists: int = 7
    """Grey distractor objects beside the red ball (BabyAI: 7)."""
    max_steps: int | None = None
    """Steps after which an episode is truncated; None: BabyAI's room_size ** 2."""

    def __post_init__(self) -> None:
        _check_room(self.room_size, self.num_dists + 1, self.max_steps)


@dataclasses.dataclass(frozen=True)
class GoToLocalConfig:
    """BabyAI GoToLocal (`tasks.babyai.GoTo`): one room, random objects, go to one of them
    ("go to the/a {colour} {type}")."""

    room_size: int = 8
    """Side of the room, walls included (BabyAI: 8)."""
    num_dists: int = 8
    """Objects in the room, the target among them (BabyAI: 8)."""
    max_steps: int | None = None
    """Steps after which an episode is truncated; None: BabyAI's room_size ** 2."""

    def __post_init__(self) -> None:
        if self.num_dists < 1:
            raise ValueError(f"num_dists={self.num_dists} must be >= 1 (the target is one).")
        _check_room(self.room_size, self.num_dists, self.max_steps)


@dataclasses.dataclass(frozen=True)
class PickupDistConfig:
    """BabyAI PickupDist (`tasks.babyai.PickupDist`): one room, objects of distinct kinds;
    "pick up the/a {colour} {type}", described by type, colour or both."""

    room_size: int = 7
    """Side of the room, walls included (BabyAI: 7)."""
    num_dists: int = 5
    """Objects in the room, of distinct (type, colour) (BabyAI: 5, at most 18)."""
    max_steps: int | None = None
    """Steps after which an episode is truncated; None: BabyAI's room_size ** 2."""

    def __post_init__(self) -> None:
        if not 1 <= self.num_dists <= 18:
            raise ValueError(
                f"num_dists={self.num_dists} must be in 1..18: the objects are of distinct "
                "(type, colour), and there are 3 types x 6 colours."
            )
        _check_room(self.room_size, self.num_dists, self.max_steps)


@dataclasses.dataclass(frozen=True)
class PickupLocConfig:
    """BabyAI PickupLoc (`tasks.babyai.PickupLoc`): one room, random objects; "pick up
    the/a [colour] {type} [on your left|on your right|in front of you|behind you]" (location
    relative to the agent at the start)."""

    room_size: int = 8
    """Side of the room, walls included (BabyAI: 8)."""
    num_dists: int = 8
    """Objects in the room (BabyAI: 8)."""
    max_steps: int | None = None
    """Steps after which an episode is truncated; None: BabyAI's room_size ** 2."""

    def __post_init__(self) -> None:
        if self.num_dists < 1:
            raise ValueError(f"num_dists={self.num_dists} must be >= 1.")
        _check_room(self.room_size, self.num_dists, self.max_steps)

"""Specs of the built-in models and tasks. `pyproject.toml` registers each of them under the
`zoo.models` / `zoo.tasks` entry points, exactly as a third-party package registers its own.
Only configuration modules are imported here (no JAX)."""

from tasks.config import (
    CompositionalGoalsConfig,
    CompositionalPreferencesConfig,
    DoorKey5x5Config,
    DoorKey6x6Config,
    DoorKey16x16Config,
    DoorKeyConfig,
    FourRoomsConfig,
    GoToLocalConfig,
    GoToObjConfig,
    GoToRedBallConfig,
    GoToRedBallGreyConfig,
    HyperteacherConfig,
    MutualExclusivityConfig,
    PickupDistConfig,
    PickupLocConfig,
    ScanEpisodesConfig,
    TeacherStudentConfig,
)
from zoo.config import (
    ANILConfig,
    LinearHypernetConfig,
    LSTMAgentConfig,
    MAMLConfig,
    MetaSeq2SeqConfig,
    NonlinearHypernetConfig,
    RIMsAgentConfig,
    ShallowHypernetConfig,
)

from ._spec import ModelSpec, TaskSpec

linear_hypernet = ModelSpec(
    name="linear-hypernet",
    config=LinearHypernetConfig,
    factory="zoo.linear_hypernet:make",
    description="Linear hypernetwork: NTK ReLU MLP generated from task embeddings (Schug et al. 2024, D.3)",
)

nonlinear_hypernet = ModelSpec(
    name="nonlinear-hypernet",
    config=NonlinearHypernetConfig,
    factory="zoo.nonlinear_hypernet:make",
    description="Nonlinear hypernetwork: embeddings through an ELU/LayerNorm MLP (Schug et al. 2024, D.4)",
)

anil = ModelSpec(
    name="anil",
    config=ANILConfig,
    factory="zoo.mlp:make_anil",
    description="ANIL: meta-learned ReLU MLP body, readout adapted per task (Schug et al. 2024, D.2)",
)

maml = ModelSpec(
    name="maml",
    config=MAMLConfig,
    factory="zoo.mlp:make_maml",
    description="MAML: ReLU MLP, every parameter adapted from a meta-learned init (Schug et al. 2024, D.1)",
)

shallow_hypernet = ModelSpec(
    name="shallow-hypernet",
    config=ShallowHypernetConfig,
    factory="zoo.shallow_hypernet:make",
    description="Teacher-student student: 2-layer MLP, first layer = modules x inferred code (Schug et al. 2024, 3.1)",
)

teacher_student = TaskSpec(
    name="teacher-student",
    config=TeacherStudentConfig,
    factory="tasks.teacher_student:make",
    description="Multi-task teacher-student: modular teacher, connected/disconnected supports (Schug et al. 2024, 3.1, C.1)",
)

hyperteacher = TaskSpec(
    name="hyperteacher",
    config=HyperteacherConfig,
    factory="tasks.hyperteacher:make",
    description="Hyperteacher: teacher MLP whose hidden layers are modular compositions (Schug et al. 2024, C.2)",
)

meta_seq2seq = ModelSpec(
    name="meta-seq2seq",
    config=MetaSeq2SeqConfig,
    factory="zoo.seq2seq:make",
    description="Meta seq2seq: biLSTM encoders, key-value memory, attention decoder; adapts in context (Lake 2019, 3)",
)

lstm_agent = ModelSpec(
    name="lstm-agent",
    config=LSTMAgentConfig,
    factory="zoo.agents:make_lstm",
    description="Vanilla agent: BabyAI actor-critic (cnn1 image, instruction GRU) with an LSTM memory (Madan et al. 2021, 4)",
)

rims_agent = ModelSpec(
    name="rims-agent",
    config=RIMsAgentConfig,
    factory="zoo.agents:make_rims",
    description="Modular agent: BabyAI actor-critic with RIMs (N=5, k=3); Meta-RIMs fast/slow split (Madan et al. 2021, 2)",
)

scan = TaskSpec(
    name="scan",
    config=ScanEpisodesConfig,
    factory="tasks.scan_episodes:make",
    description="SCAN episodes: add-jump (permutation, augmentation), around-right, length (Lake 2019, 4.3-4.6)",
)

mutual_exclusivity = TaskSpec(
    name="mutual-exclusivity",
    config=MutualExclusivityConfig,
    factory="tasks.scan_episodes:make_me",
    description="Mutual exclusivity: pseudowords to meanings, one word unseen (Lake 2019, 4.2)",
)

compositional_preferences = TaskSpec(
    name="compositional-preferences",
    config=CompositionalPreferencesConfig,
    factory="tasks.preference_grid:make",
    description="Compositional preferences grid world: rewards from composed preference modules (Schug et al. 2024, 4.2, C.3)",
)

compositional_goals = TaskSpec(
    name="compositional-goals",
    config=CompositionalGoalsConfig,
    factory="tasks.goal_grid:make",
    description="Compositional goals grid world: imitate shortest paths to (quadrant, interaction, maze, object) goals (Schug et al. 2024, 4.3, C.4)",
)

doorkey_5x5 = TaskSpec(
    name="doorkey-5x5",
    config=DoorKey5x5Config,
    factory="tasks.minigrid_levels:make_doorkey",
    description="MiniGrid DoorKey-5x5 environment: key, locked door, goal; max 250 steps (Madan et al. 2021)",
)

doorkey_6x6 = TaskSpec(
    name="doorkey-6x6",
    config=DoorKey6x6Config,
    factory="tasks.minigrid_levels:make_doorkey",
    description="MiniGrid DoorKey-6x6 environment: key, locked door, goal; max 360 steps (Madan et al. 2021)",
)

doorkey_8x8 = TaskSpec(
    name="doorkey-8x8",
    config=DoorKeyConfig,
    factory="tasks.minigrid_levels:make_doorkey",
    description="MiniGrid DoorKey-8x8 environment: key, locked door, goal; max 640 steps (Madan et al. 2021)",
)

doorkey_16x16 = TaskSpec(
    name="doorkey-16x16",
    config=DoorKey16x16Config,
    factory="tasks.minigrid_levels:make_doorkey",
    description="MiniGrid DoorKey-16x16 environment: key, locked door, goal; max 2560 steps (Madan et al. 2021)",
)

fourrooms = TaskSpec(
    name="fourrooms",
    config=FourRoomsConfig,
    factory="tasks.minigrid_levels:make_fourrooms",
    description="MiniGrid FourRooms environment: 19x19, reach the goal; max 100 steps (Madan et al. 2021)",
)

babyai_gotoobj = TaskSpec(
    name="babyai-gotoobj",
    config=GoToObjConfig,
    factory="tasks.babyai:make_gotoobj",
    description="BabyAI GoToObj environment: one room, one object, 'go to the {colour} {type}' (Madan et al. 2021)",
)

babyai_gotoredball = TaskSpec(
    name="babyai-gotoredball",
    config=GoToRedBallConfig,
    factory="tasks.babyai:make_gotoredball",
    description="BabyAI GoToRedBall environment: red ball among 7 random distractors (Madan et al. 2021)",
)

babyai_gotoredballgrey = TaskSpec(
    name="babyai-gotoredballgrey",
    config=GoToRedBallGreyConfig,
    factory="tasks.babyai:make_gotoredballgrey",
    description="BabyAI GoToRedBallGrey environment: red ball among 7 grey distractors (Madan et al. 2021)",
)

babyai_gotolocal = TaskSpec(
    name="babyai-gotolocal",
    config=GoToLocalConfig,
    factory="tasks.babyai:make_gotolocal",
    description="BabyAI GoToLocal environment: go to one of 8 objects in a room (Madan et al. 2021)",
)

babyai_pickupdist = TaskSpec(
    name="babyai-pickupdist",
    config=PickupDistConfig,
    factory="tasks.babyai:make_pickupdist",
    description="BabyAI PickupDist environment: pick up an object described by type and/or colour among distractors (Madan et al. 2021)",
)

babyai_pickuploc = TaskSpec(
    name="babyai-pickuploc",
    config=PickupLocConfig,
    factory="tasks.babyai:make_pickuploc",
    description="BabyAI PickupLoc environment: pick up an object described by location (Madan et al. 2021)",
)

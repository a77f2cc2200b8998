"""Episodes of Lake 2019: relabelled SCAN commands keep SCAN's meaning under the episode's
assignment, training never sees a held-out assignment, validation episodes have the true one
(as the reference's), support and query items are distinct, the test episodes are the splits'
test sets, and mutual-exclusivity episodes translate word by word."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tasks import scan
from tasks import scan_episodes as se
from tasks.config import ScanEpisodesConfig

N_EPISODES = 300


@pytest.fixture(
    scope="module",
    params=["permutation", "augmentation", "around_right", "length", "around_right-20"],
)
def episodes(request):
    experiment, _, extra = request.param.partition("-")  # around_right-20: 20 extra directions
    task = se.make_scan_episodes(
        experiment, num_extra_directions=int(extra or 2), key=jax.random.key(0)
    )
    keys = jax.random.split(jax.random.key(1), N_EPISODES)
    batch = eqx.filter_jit(lambda t, k: jax.vmap(t.sample)(k))(task, keys)
    val = eqx.filter_jit(lambda t, k: jax.vmap(lambda k: t.sample(k, "val"))(k))(task, keys[:20])
    return task, jax.tree.map(np.asarray, batch), jax.tree.map(np.asarray, val)


def _meaning(task, assignment):
    """word -> template word, and template action -> action, of one assignment."""
    words = {
        task.vocab.inputs[w]: task.vocab.inputs[int(s)]
        for s, (w, _) in zip(np.asarray(task.slot_words), assignment, strict=True)
    }
    actions = {
        task.vocab.outputs[int(s)]: task.vocab.outputs[a]
        for s, (_, a) in zip(np.asarray(task.slot_actions), assignment, strict=True)
    }
    return words, actions


def test_io_describes_the_episodes(episodes):
    task, batch, _ = episodes
    io = task.io
    assert batch.support.x.shape[2:] == batch.query.x.shape[2:] == io.x_shape == (se.MAX_IN,)
    assert batch.support.y.shape[2:] == batch.query.y.shape[2:] == io.y_shape == (se.MAX_OUT,)
    assert str(batch.query.x.dtype) == io.x_dtype and str(batch.query.y.dtype) == io.y_dtype
    assert io.x_vocab == io.in_features == len(task.vocab.inputs) > batch.query.x.max()
    assert io.y_vocab == io.out_features == len(task.vocab.outputs) > batch.query.y.max()


def test_every_item_means_what_scan_says_under_the_assignment(episodes):
    task, batch, _ = episodes
    for e in range(0, N_EPISODES, 30):
        assignment = batch.latent[e].astype(int)
        words, actions = _meaning(task, assignment)
        for split in (batch.support, batch.query):
            for x, y in zip(split.x[e], split.y[e], strict=True):
                command = task.vocab.decode(x, out=False)
                template = " ".join(words.get(w, w) for w in command)
                expected = tuple(actions.get(a, a) for a in scan.interpret(template))
                assert task.vocab.decode(y, out=True) == expected
                assert x[len(command)] == task.vocab.inputs.index(se.EOS)


def _true(task):
    words, actions = (np.asarray(a).tolist() for a in (task.slot_words, task.slot_actions))
    return frozenset(zip(words, actions, strict=True))


def test_validation_has_the_true_assignment_which_training_never_draws(episodes):
    # The reference's validation episodes: the true meanings, random items; its tabu list
    # then keeps that assignment (augmentation: "jump" meaning I_JUMP; around-right: "right"
    # meaning I_TURN_RIGHT) out of training, and nothing else.
    task, batch, val = episodes
    inputs, outputs = task.vocab.inputs, task.vocab.outputs
    validation = {frozenset(map(tuple, v)) for v in np.asarray(task.validation).tolist()}
    assert validation == {_true(task)}
    assert {frozenset(map(tuple, a)) for a in val.latent.astype(int).tolist()} == validation
    assert len({tuple(x.ravel()) for x in val.query.x}) == len(val.query.x)  # items vary
    seen = {frozenset(map(tuple, a)) for a in batch.latent.astype(int).tolist()}
    assert _true(task) not in seen
    pairs = {(inputs[w], outputs[a]) for s in seen for w, a in s}
    if task.experiment == "permutation":
        assert len(seen) == 23  # every permutation but the true one
    if task.experiment == "augmentation":
        assert ("jump", "I_JUMP") not in pairs and len(seen) > 250
        # "jump" is a slot word as often as in the reference: 4 of 24 words, less the
        # rejected "jump" meaning I_JUMP: (1/6 - 1/144) / (1 - 1/144) = 0.161
        with_jump = np.mean(
            [any(inputs[w] == "jump" for w, _ in a) for a in batch.latent.astype(int)]
        )
        assert 0.10 < with_jump < 0.23
    if task.experiment == "around_right":
        assert ("right", "I_TURN_RIGHT") not in pairs
        words, _ = se.extra_directions(len(task.candidate_words) - 2)
        assert {w for w, _ in pairs} == {"left", "right", *words}
    if task.experiment == "length":  # the reference's: training items, test queries
        train, test = (dict(p) for p in scan.split("length"))
        for items, allowed in ((val.support.x, train), (val.query.x, test)):
            commands = {
                " ".join(task.vocab.decode(x, out=False)) for x in items.reshape(-1, se.MAX_IN)
            }
            assert commands <= allowed.keys()


def test_support_and_query_items_are_distinct(episodes):
    _, batch, val = episodes
    for split in (batch, val):
        for support, query in zip(split.support.x, split.query.x, strict=True):
            items = [tuple(x) for x in np.concatenate([support, query])]
            assert len(set(items)) == len(items)


@pytest.mark.parametrize("experiment", ["permutation", "around_right"])
def test_held_out_validation_is_an_option(experiment):
    # `validation="held-out"`: five random assignments, never drawn in training.
    task = se.make_scan_episodes(experiment, validation="held-out", key=jax.random.key(0))
    keys = jax.random.split(jax.random.key(1), N_EPISODES)
    latent = eqx.filter_jit(lambda t, k: jax.vmap(lambda k: t.assignment(k))(k))(task, keys)
    inputs, outputs = task.vocab.inputs, task.vocab.outputs
    validation = {frozenset(map(tuple, v)) for v in np.asarray(task.validation).tolist()}
    assert len(validation) == se.NUM_VALIDATION and _true(task) not in validation
    seen = {frozenset(map(tuple, a)) for a in np.asarray(latent).tolist()}
    assert not seen & validation
    pairs = {(inputs[w], outputs[a]) for s in seen for w, a in s}
    if experiment == "permutation":
        assert _true(task) not in seen and len(seen) == 23 - se.NUM_VALIDATION
    else:
        assert ("right", "I_TURN_RIGHT") not in pairs


def test_the_test_episodes_are_the_splits_test_sets(episodes):
    task, _, _ = episodes
    tests = task.test_episodes()
    name = {"length": "length", "around_right": "template_around_right"}.get(
        task.experiment, "addprim_jump"
    )
    _, test = scan.split(name)
    assert len(tests) == (5 if task.experiment == "length" else 1)
    episode = tests[0]
    decoded = [
        (" ".join(task.vocab.decode(x, out=False)), task.vocab.decode(y, out=True))
        for x, y in zip(np.asarray(episode.query.x), np.asarray(episode.query.y), strict=True)
    ]
    assert decoded == list(test)
    support = {" ".join(task.vocab.decode(x, out=False)) for x in np.asarray(episode.support.x)}
    if task.experiment in ("permutation", "augmentation"):
        assert support == set(scan.PRIMITIVES)
    elif task.experiment == "around_right":
        assert support == {"turn left", "turn right"}
    else:
        train, _ = scan.split("length")
        assert len(support) == 100 and support <= {c for c, _ in train}


def test_length_episodes_extrapolate_from_short_to_longer_items(episodes):
    task, batch, _ = episodes
    if task.experiment != "length":
        pytest.skip("length only")
    lengths = (batch.support.y != 0).sum(-1) - 1  # actions, without EOS
    assert batch.support.x.shape[1] == 100 and lengths.max() < 12
    lengths = (batch.query.y != 0).sum(-1) - 1
    assert lengths.min() >= 12 and lengths.max() <= 22


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="unknown experiment"):
        se.vocabulary("simple")
    with pytest.raises(ValueError, match="num_query"):
        se.make_scan_episodes("permutation", num_query=-1, key=jax.random.key(0))


def test_mutual_exclusivity_episodes():
    task = se.make_mutual_exclusivity(key=jax.random.key(0))
    train, test = set(np.asarray(task.train_permutations)), set(np.asarray(task.test_permutations))
    assert len(train) == 19 and len(test) == 5 and not train & test
    keys = jax.random.split(jax.random.key(2), 200)
    for pool, allowed in (("train", train), ("test", test)):
        batch = jax.tree.map(np.asarray, jax.vmap(lambda k, pool=pool: task.sample(k, pool))(keys))
        permutations = np.asarray(task.permutations)
        for e in range(0, 200, 20):
            meaning = batch.latent[e].astype(int)
            index = int(np.flatnonzero((permutations == meaning).all(-1))[0])
            assert index in allowed
            table: dict[str, str] = dict(
                zip(se.ME_WORDS, (se.ME_MEANINGS[m] for m in meaning), strict=True)
            )
            shown = [task.vocab.decode(x, out=False) for x in batch.support.x[e]]
            assert len(shown) == 3 and all(len(s) == 1 for s in shown)
            assert len({s[0] for s in shown}) == 3
            for x, y in zip(batch.query.x[e], batch.query.y[e], strict=True):
                words = task.vocab.decode(x, out=False)
                assert 2 <= len(words) <= 6
                assert task.vocab.decode(y, out=True) == tuple(table[w] for w in words)
    assert jnp.all(task.loss(jnp.zeros((3, 7, 7)), jnp.ones((3, 7), jnp.int32)) > 0)
    io = task.io
    assert batch.support.x.shape[2:] == batch.query.y.shape[2:] == io.x_shape == io.y_shape
    assert (io.x_vocab, io.y_vocab, io.out_features) == (6, 7, 7)
    assert str(batch.query.x.dtype) == io.x_dtype == io.y_dtype == "int32"


def test_standard_batches_are_the_plain_addjump_split_with_jump_in_each():
    task = se.make_scan_episodes("standard", num_query=40, key=jax.random.key(0))
    assert task.pools() == ("train",)
    keys = jax.random.split(jax.random.key(1), 20)
    batch = jax.tree.map(np.asarray, eqx.filter_jit(lambda t, k: jax.vmap(t.sample)(k))(task, keys))
    assert batch.support.x.shape == (20, 0, se.MAX_IN) and batch.query.x.shape[1] == 40
    train = dict(scan.split("addprim_jump")[0])
    for e in range(20):
        commands = [" ".join(task.vocab.decode(x, out=False)) for x in batch.query.x[e]]
        assert commands.count("jump") >= 1 and commands[-1] == "jump"
        for command, y in zip(commands, batch.query.y[e], strict=True):
            assert task.vocab.decode(y, out=True) == train[command]
    (test,) = task.test_episodes()
    assert test.support.x.shape[0] == 0 and test.query.x.shape[0] == 7_706


def _sample(task, n, seed=1):
    keys = jax.random.split(jax.random.key(seed), n)
    return jax.tree.map(np.asarray, eqx.filter_jit(lambda t, k: jax.vmap(t.sample)(k))(task, keys))


def test_standard_augmentation_batches_compose_primitives_of_fixed_meaning():
    task = se.make_scan_episodes("standard_augmentation", num_query=40, key=jax.random.key(0))
    assert task.pools() == ("train",) and len(task.vocab.inputs) == len(
        se.vocabulary("augmentation").inputs
    )
    batch = _sample(task, 20)
    assert batch.support.x.shape == (20, 0, se.MAX_IN) and batch.query.x.shape[1] == 40
    words = scan.PRIMITIVES + se.EXTRA_PRIMITIVES
    meaning = dict(
        zip(words, ("I_WALK", "I_LOOK", "I_RUN", "I_JUMP", *se.EXTRA_ACTIONS), strict=True)
    )
    seen = set()
    for e in range(20):
        commands = [task.vocab.decode(x, out=False) for x in batch.query.x[e]]
        assert commands[-1] == ("jump",) and task.vocab.decode(batch.query.y[e, -1], out=True) == (
            "I_JUMP",
        )
        for command, y in zip(commands[:-1], batch.query.y[e, :-1], strict=True):
            assert "jump" not in command  # jump is only ever seen alone
            # the command's primitives, written as SCAN's, then each meaning its fixed action
            used = list(dict.fromkeys(w for w in command if w in meaning))
            assert len(used) <= 2  # none in "turn left" and the like
            seen.update(used)
            base = dict(zip(used, ("walk", "look"), strict=False))
            back = {b: meaning[w] for w, b in zip(used, ("I_WALK", "I_LOOK"), strict=False)}
            expected = scan.interpret(" ".join(base.get(w, w) for w in command))
            assert task.vocab.decode(y, out=True) == tuple(back.get(a, a) for a in expected)
    assert len(seen) == 23  # every primitive but jump, in 20 batches of 39 commands
    (test,) = task.test_episodes()
    assert test.support.x.shape[0] == 0 and test.query.x.shape[0] == 7_706


@pytest.mark.parametrize(
    "experiment, split, tests",
    [
        ("standard_around_right", "template_around_right", 4_476),
        ("standard_length", "length", 3_920),
    ],
)
def test_standard_baselines_train_on_their_splits_training_set(experiment, split, tests):
    task = se.make_scan_episodes(experiment, num_query=40, key=jax.random.key(0))
    assert task.pools() == ("train",) and task.vocab == se.vocabulary("permutation")
    batch = _sample(task, 10)
    train = dict(scan.split(split)[0])
    for e in range(10):
        commands = [" ".join(task.vocab.decode(x, out=False)) for x in batch.query.x[e]]
        assert len(set(commands)) == 40
        for command, y in zip(commands, batch.query.y[e], strict=True):
            assert task.vocab.decode(y, out=True) == train[command]
    (test,) = task.test_episodes()
    assert test.support.x.shape[0] == 0 and test.query.x.shape[0] == tests
    assert {" ".join(task.vocab.decode(x, out=False)) for x in np.asarray(test.query.x)} == {
        c for c, _ in scan.split(split)[1]
    }


def test_around_right_with_20_extra_directions():
    task = se.make_scan_episodes("around_right", num_extra_directions=20, key=jax.random.key(0))
    assert len(task.candidate_words) == len(task.candidate_actions) == 22
    assert {"forward", "backward", "Direction20"} <= set(task.vocab.inputs)
    batch = _sample(task, 200)
    drawn = set(batch.latent[:, :, 0].astype(int).ravel().tolist())
    assert len(drawn) > 15  # the slots are written as many of the 22 directions
    with pytest.raises(ValueError, match="around_right"):
        ScanEpisodesConfig("permutation", num_extra_directions=20)
    with pytest.raises(ValueError, match="num_extra_directions"):
        se.make_scan_episodes("around_right", num_extra_directions=-1, key=jax.random.key(0))


def test_configs_saved_before_the_validation_option_load_as_they_ran():
    from runs.config import to_dict
    from runs.presets import get_preset
    from runs.run import config_from_dict

    config = get_preset("lake2019/addjump-permutation")
    assert config.task.validation == "true-assignment"
    data = to_dict(config)
    assert config_from_dict(data).task == config.task
    del data["task"]["validation"]  # saved before the field: those runs held five out
    assert config_from_dict(data).task.validation == "held-out"
    # refused: by the config's own check, or first by the type checker under pytest
    with pytest.raises((ValueError, TypeError), match="validation"):
        ScanEpisodesConfig(validation="true")  # pyright: ignore[reportArgumentType]

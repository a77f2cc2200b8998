"""The trained agents Madan et al. 2021's plugin ships (entry points `zoo.pretrained`): each a
directory `zoo export` wrote beside this module, made by `scripts/train_pretrained.py NAME`.
Light: `runs.load("pretrained:NAME")` reads the weights."""

from plugins import PretrainedSpec

_HERE = "plugins.madan2021.pretrained"

lstm_doorkey_5x5 = PretrainedSpec(
    name="madan2021-lstm-doorkey-5x5",
    path=f"{_HERE}:madan2021-lstm-doorkey-5x5",
    description="LSTM agent, MiniGrid DoorKey-5x5, 1.02M frames of PPO (CPU scale), seed 0",
)
rims_doorkey_5x5 = PretrainedSpec(
    name="madan2021-rims-doorkey-5x5",
    path=f"{_HERE}:madan2021-rims-doorkey-5x5",
    description="RIMs agent, MiniGrid DoorKey-5x5, 1.02M frames of PPO (CPU scale), seed 0",
)
meta_rims_doorkey_5x5 = PretrainedSpec(
    name="madan2021-meta-rims-doorkey-5x5",
    path=f"{_HERE}:madan2021-meta-rims-doorkey-5x5",
    description="Meta-RIMs agent, MiniGrid DoorKey-5x5, 1.02M frames (CPU scale), seed 0",
)
lstm_gotoobj = PretrainedSpec(
    name="madan2021-lstm-gotoobj",
    path=f"{_HERE}:madan2021-lstm-gotoobj",
    description="LSTM agent, BabyAI GoToObj, 1.02M frames of PPO (CPU scale), seed 0",
)

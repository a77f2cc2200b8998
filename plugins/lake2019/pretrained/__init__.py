"""The trained models Lake 2019's plugin ships (entry points `zoo.pretrained`): each a
directory `zoo export` wrote beside this module, made by `scripts/train_pretrained.py NAME`.
Light: `runs.load("pretrained:NAME")` reads the weights."""

from plugins import PretrainedSpec

_HERE = "plugins.lake2019.pretrained"

meta_seq2seq_addjump = PretrainedSpec(
    name="lake2019-meta-seq2seq-addjump",
    path=f"{_HERE}:lake2019-meta-seq2seq-addjump",
    description="meta seq2seq, SCAN add-jump, permutation meta-training, 10,000 episodes, seed 0",
)
seq2seq_addjump = PretrainedSpec(
    name="lake2019-seq2seq-addjump",
    path=f"{_HERE}:lake2019-seq2seq-addjump",
    description="standard seq2seq baseline, SCAN add-jump, 10,000 batches of 40, seed 0",
)

"""What a task's data look like to a model: `IOSpec`.

A task states it (`AbstractTask.io`); a model factory receives it
(`factory(config, *, io: IOSpec, key)`). A plain frozen dataclass of Python values: this module
imports no JAX (and no NumPy), so that tasks and plugin specs may import it freely.
"""

import dataclasses


@dataclasses.dataclass(frozen=True, kw_only=True)
class IOSpec:
    """Shapes, dtypes and sizes of one example of a task's data, as a model needs them to be
    built.

    Shapes are those of one example, without the batch axis of a split (a split of `n`
    examples holds `x: [n, *x_shape]`, `y: [n, *y_shape]`). Dtypes are NumPy dtype names
    (`"float32"`, `"int32"`, `"bool"`...).

    Vectors in, vectors out (regression, soft classification):

    ```python
    IOSpec.vectors(16, 8)  # x: [16] float32, y: [8] float32, predictions of 8 features
    ```

    Token sequences in and out (SCAN):

    ```python
    IOSpec.sequences(x_len=10, y_len=49, x_vocab=15, y_vocab=9)
    # x: [10] int32 ids < 15, y: [49] int32 ids < 9, predictions of 9 logits per position
    ```

    All fields are keyword-only.

    **Raises:**

    `ValueError` if a shape holds a negative size, a size is not positive, a dtype is not a
    dtype name, or a vocabulary is given for a dtype that is not an integer dtype.
    """

    x_shape: tuple[int, ...]
    """Shape of one input, e.g. `(16,)`, or `(10,)` for a sequence of 10 tokens."""
    x_dtype: str
    """NumPy dtype name of the inputs, e.g. `"float32"`; an integer dtype for tokens."""
    y_shape: tuple[int, ...]
    """Shape of one target, e.g. `(8,)`, or `(49,)` for a sequence of 49 tokens."""
    y_dtype: str
    """NumPy dtype name of the targets."""
    out_features: int
    """Size of one prediction vector: the last axis of what the model outputs for one example
    (for token targets, the number of logits per position), as the task's `loss` and
    `metrics` take it."""
    x_vocab: int | None = None
    """Number of distinct input tokens (ids `0 .. x_vocab - 1`) if inputs are token ids, else
    `None`."""
    y_vocab: int | None = None
    """Number of distinct target tokens if targets are token ids, else `None`."""
    actions: int | None = None
    """Number of discrete actions if the task is an environment acted in, else `None`."""
    mission_len: int | None = None
    """Length of an environment's mission (instruction) token array, padded with 0, if its
    observations carry one, else `None`."""
    mission_vocab: int | None = None
    """Number of distinct mission tokens (ids `0 .. mission_vocab - 1`, 0 the padding) if
    observations carry a mission, else `None`."""

    def __post_init__(self):
        for name in ("x_shape", "y_shape"):
            shape = tuple(getattr(self, name))
            if not all(isinstance(n, int) and n >= 0 for n in shape):
                raise ValueError(f"IOSpec: {name} must hold sizes >= 0, got {shape}.")
            object.__setattr__(self, name, shape)
        for name in (
            "out_features",
            "x_vocab",
            "y_vocab",
            "actions",
            "mission_len",
            "mission_vocab",
        ):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"IOSpec: {name} must be a positive int, got {value!r}.")
        for dtype in ("x_dtype", "y_dtype"):
            if not isinstance(getattr(self, dtype), str):
                raise ValueError(
                    f"IOSpec: {dtype} must be a dtype name such as 'float32', "
                    f"got {getattr(self, dtype)!r}."
                )
        if (self.mission_len is None) != (self.mission_vocab is None):
            raise ValueError(
                "IOSpec: give both mission_len and mission_vocab (observations with a "
                "mission) or neither."
            )
        for vocab, dtype in (("x_vocab", "x_dtype"), ("y_vocab", "y_dtype")):
            if getattr(self, vocab) is not None and not _is_integer(getattr(self, dtype)):
                raise ValueError(
                    f"IOSpec: {vocab} is given, so {dtype} must be an integer dtype, "
                    f"got {getattr(self, dtype)!r}."
                )

    @property
    def in_features(self) -> int:
        """Size of one input feature vector: `x_vocab` for token inputs (the size of their
        one-hot or embedding table), else the last axis of `x_shape`.

        **Raises:**

        `ValueError` if inputs are scalars (`x_shape == ()`) and not tokens.
        """
        if self.x_vocab is not None:
            return self.x_vocab
        if not self.x_shape:
            raise ValueError("IOSpec: scalar inputs (x_shape == ()) have no in_features.")
        return self.x_shape[-1]

    @classmethod
    def vectors(cls, in_features: int, out_features: int, *, dtype: str = "float32") -> "IOSpec":
        """Inputs `[in_features]` and targets `[out_features]` of `dtype`, predictions of
        `out_features` (regression, or classification against probability rows)."""
        return cls(
            x_shape=(in_features,),
            x_dtype=dtype,
            y_shape=(out_features,),
            y_dtype=dtype,
            out_features=out_features,
        )

    @classmethod
    def sequences(
        cls, *, x_len: int, y_len: int, x_vocab: int, y_vocab: int, dtype: str = "int32"
    ) -> "IOSpec":
        """Input token ids `[x_len]` below `x_vocab`, target token ids `[y_len]` below
        `y_vocab`, both of `dtype`; predictions of `y_vocab` logits per target position."""
        return cls(
            x_shape=(x_len,),
            x_dtype=dtype,
            y_shape=(y_len,),
            y_dtype=dtype,
            out_features=y_vocab,
            x_vocab=x_vocab,
            y_vocab=y_vocab,
        )

    @classmethod
    def environment(
        cls,
        *,
        view: tuple[int, ...],
        actions: int,
        mission_len: int | None = None,
        mission_vocab: int | None = None,
    ) -> "IOSpec":
        """An environment acted in: observations `{"image": uint8 [*view], "direction": int32
        [], "mission": int32 [mission_len]}` (`"mission"` only with a mission), one action id
        below `actions` per step, and policies of `actions` logits.

        ```python
        IOSpec.environment(view=(7, 7, 3), actions=7, mission_len=9, mission_vocab=40)
        ```
        """
        return cls(
            x_shape=view,
            x_dtype="uint8",
            y_shape=(),
            y_dtype="int32",
            out_features=actions,
            actions=actions,
            mission_len=mission_len,
            mission_vocab=mission_vocab,
        )

    @property
    def is_environment(self) -> bool:
        """Whether the task is an environment acted in (`actions` is given)."""
        return self.actions is not None


def _is_integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))

"""An example zoo plugin. Its entry points name `zoo_example_plugin_v010.specs`, which imports no JAX;
the model and the task (`model.py`, `task.py`) are imported only when built."""

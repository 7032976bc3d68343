"""Every use of TensorFlow internals in harness, in one place.

TensorFlow 2.21 still ships the v1 distribution strategies harness drives in
graph mode, but a few things the Estimator needs have no public API. Each
function of this package is one such access, with the reason and the
TensorFlow versions it was checked on (2.21.0): `distribute` (the v1
strategies), `training` (hooks, savers, variables), `keras` (tf_keras). If a
TensorFlow upgrade breaks harness, this package is where it breaks.
tests/test_tf_private_guard.py fails on any private TF access (`x._y`,
`getattr(x, "_y")`, `tensorflow.python`) elsewhere.

No `tensorflow.python.*` module is imported: every access is a private
attribute of a public object (or a patch of a public class), which keeps the
surface to what is listed here.

The door is lazy: a name loads its module on first use, so that `_tf`,
which the modules import, can read `keras_choice` (which imports nothing of
harness) while it loads TensorFlow, with no import circle.
"""

import importlib

# Module -> the names the door hands on from it.
_BY_MODULE = {
    "distribute": (
        "collective_communication_options",
        "collective_num_devices_per_worker", "localize_tf_config_resolver",
        "loss_scaled_by_optimizer", "mirrored_cross_device_ops",
        "override_collective_local_devices", "reinitialize_collective_local",
        "scale_loss_for_estimator", "set_collective_communication_options",
        "set_collective_key_base", "server_class", "set_ps_gpus_per_worker",
        "started_in_process_server", "worker_input_context",
        "ps_task_count", "ps_variable_placement"),
    "keras": (
        "is_graph_network", "keras_compiled_metrics",
        "keras_loss_and_train_op", "keras_restore_subclassed", "keras_track",
        "keras_weight_compiled_loss", "seed_keras_initializers"),
    "keras_choice": (
        "loaded_keras_name", "keras_3_holders", "reroute_keras_to_tf_keras"),
    "training": (
        "add_saving_listeners", "moved_modules", "remove_autograph_files",
        "GLOBAL_STEP_READ_KEY", "global_step_read", "initializer_ops",
        "rebuild_saver", "RetentionSaver", "saved_model_proto",
        "set_hook_steps_per_run",
        "SUMMARY_WRITER_INIT_KEY", "variable_fetch_tensor"),
}
_EXPORTS = {name: module for module, names in _BY_MODULE.items()
            for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
  if name in _EXPORTS:
    value = getattr(importlib.import_module(
        f"harness._tf_private.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value
  raise AttributeError(
      f"module 'harness._tf_private' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_EXPORTS))

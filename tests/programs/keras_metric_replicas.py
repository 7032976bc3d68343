"""Keras metrics in a spec built per replica, evaluated as 2.15 did.

Run: python tests/programs/keras_metric_replicas.py (prints `results {...}`).
tests/test_spec_keras_metrics.py runs it in its own process: the two
logical CPUs must be set before TensorFlow starts.

A v1 MirroredStrategy over two logical CPUs calls the model_fn once per
replica (replica i sees the value i + 1); each spec holds a Keras metric
built in the replica (`own`) and one built before (`shared`), which the
EstimatorSpec turns into `(result, update_op)` pairs; evaluation groups the
replicas' updates: `own` is the mean of 10 and 20, `shared` of 1 and 2.
"""

import harness
from harness import spec as spec_lib
from harness._tf import tf
from harness.core import evaluation

tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0],
    [tf.config.LogicalDeviceConfiguration()] * 2)


def main():
  with tf.Graph().as_default():
    global_step = tf.compat.v1.train.get_or_create_global_step()
    strategy = tf.compat.v1.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
      shared = tf.keras.metrics.Mean(name="shared")

      def model_fn():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        value = tf.cast(replica, tf.float32) + 1.0
        own = tf.keras.metrics.Mean(name="own")
        own.update_state(value * 10.0)
        shared.update_state(value)
        return spec_lib.EstimatorSpec(
            mode=harness.ModeKeys.EVAL, loss=value * 100.0,
            eval_metric_ops={"own": own, "shared": shared})

      grouped = strategy.extended.call_for_each_replica(model_fn)
      final_ops, update_op = evaluation.eval_dict_from_spec(
          grouped, global_step, strategy)
    print("pair_types", {k: type(v).__name__
                         for k, v in grouped.eval_metric_ops.items()})
    with tf.compat.v1.Session() as session:
      session.run([tf.compat.v1.global_variables_initializer(),
                   tf.compat.v1.local_variables_initializer()])
      session.run(update_op)
      results = session.run(final_ops)
    print("results", {k: float(v) for k, v in results.items()})


if __name__ == "__main__":
  main()

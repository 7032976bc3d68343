"""A tf.estimator 2.15 multi-worker program: MultiWorkerMirroredStrategy
built at top level in every task, then train_and_evaluate. For
tests/test_fidelity215_user.py (issue 47, item 3)::

    python -m harness.launch --workers=2 --evaluator -- \\
        python -m harness.run tests/legacy_programs/legacy_multiworker.py MODEL_DIR

With a second argument `strategy_only` it builds the strategy, prints
`replicas N` and ends.
"""

import sys

import numpy as np
import tensorflow as tf

strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
if sys.argv[2:] == ["strategy_only"]:
  print(f"replicas {strategy.num_replicas_in_sync}", flush=True)
  sys.exit(0)


def input_fn():
  x = np.random.RandomState(0).rand(64, 2).astype(np.float32)
  y = (x.sum(axis=1) > 1).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8)


def eval_input_fn():
  return input_fn().take(4)


config = tf.estimator.RunConfig(train_distribute=strategy,
                                save_checkpoints_steps=20)
estimator = tf.estimator.DNNClassifier(
    hidden_units=[4], model_dir=sys.argv[1], config=config,
    feature_columns=[tf.feature_column.numeric_column("x", shape=[2])])
tf.estimator.train_and_evaluate(
    estimator, tf.estimator.TrainSpec(input_fn, max_steps=40),
    tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0,
                          throttle_secs=0))

"""Two tf.estimator 2.15 Estimators, for their `Using config: {...}` lines.

    python -m harness.run tests/legacy_programs/legacy_config.py MODEL_DIR

tests/fixtures/logs215/record.py runs it under real tf.estimator 2.15 too
and keeps those lines (using_config.txt); tests/test_fidelity215_user.py
compares harness's with them. After each Estimator it writes
`legacy_config: built` to stderr, which ends the line before it.
"""

import os
import sys

import tensorflow as tf

CONFIGS = (
    None,  # The default RunConfig ("Using default config." first).
    dict(tf_random_seed=7, save_checkpoints_steps=50, keep_checkpoint_max=3,
         log_step_count_steps=10, save_summary_steps=20),
)


def model_fn(features, labels, mode):
  del features, labels, mode


def main(model_dir):
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  for i, kwargs in enumerate(CONFIGS):
    config = None if kwargs is None else tf.estimator.RunConfig(**kwargs)
    tf.estimator.Estimator(model_fn, model_dir=os.path.join(model_dir, str(i)),
                           config=config)
    sys.stderr.write("legacy_config: built\n")
    sys.stderr.flush()


if __name__ == "__main__":
  main(sys.argv[1])

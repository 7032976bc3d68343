"""What lives in a model_dir, and the one way to touch it.

`storage` (file access through `tf.io.gfile`), `paths` (model_dir's normal
form), `run_state` (marker files), `lease` (one writer per model_dir),
`checkpoints` (the usable checkpoint, shape checks), `retention`
(checkpoint retention, interrupted saves' leftovers).

Import rule: `harness.errors`, `harness._tf`, `harness.cluster` and this
folder only; never core/, distribute/, cli/ or the top-level API modules.
"""

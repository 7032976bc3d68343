"""What lives in a model_dir, and the one way to touch it.

    from harness.state import checkpoints, storage

    storage.write_text_atomic(path, text)   # through tf.io.gfile
    prefix = checkpoints.latest_usable_checkpoint(model_dir)  # or None

Every model_dir file operation of harness goes through this folder (on any
filesystem tf.io.gfile knows). state/ imports `errors`, `_tf` and cluster/
only; docs/ARCHITECTURE.md has a line per module.
"""
